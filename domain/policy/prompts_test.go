package policy_test

import (
	"math/rand/v2"
	"strings"
)

// englishWords is a small vocabulary of common English words; prompts drawn from it have
// the shape of real chat text (short words, spaces, punctuation) rather than random letters.
var englishWords = strings.Fields(`the of and to a in is it you that he was for on are with as his they
be at one have this from or had by hot word but what some we can out other were all there when up
use your how said an each she which do their time if will way about many then them write would
like so these her long make thing see him two has look more day could go come did number sound no
most people my over know water than call first who may down side been now find any new work part
take get place made live where after back little only round man year came show every good me give
our under name very through just form sentence great think say help low line differ turn cause much
mean before move right boy old too same tell does set three want air well also play small end put
home read hand port large spell add even land here must big high such follow act why ask men change
went light kind off need house picture try us again animal point mother world near build self earth
father head stand own page should country found answer school grow study still learn plant cover
food sun four between state keep eye never last let thought city tree cross farm hard start might
story saw far sea draw left late run while press close night real life few north open seem together
next white children begin got walk example ease paper group always music those both mark often
letter until mile river car feet care second book carry took science eat room friend began idea
fish mountain stop once base hear horse cut sure watch color face wood main enough plain girl usual
young ready above ever red list though feel talk bird soon body dog family direct pose leave song
measure door product black short numeral class wind question happen complete ship area half rock
order fire south problem piece told knew pass since top whole king space heard best hour better
true during hundred five remember step early hold west ground interest reach fast verb sing listen
six table travel less morning ten simple several vowel toward war lay against pattern slow center
love person money serve appear road map rain rule govern pull cold notice voice unit power town fine
certain fly fall lead cry dark machine note wait plan figure star box noun field rest correct able
pound done beauty drive stood contain front teach week final gave green oh quick develop ocean warm
free minute strong special mind behind clear tail produce fact street inch multiply nothing course
stay wheel full force blue object decide surface deep moon island foot system busy test record boat
common gold possible plane stead dry wonder laugh thousand ago ran check game shape equate miss
brought heat snow tire bring yes distant fill east paint language among grand ball yet wave drop
heart am present heavy dance engine position arm wide sail material size vary settle speak weight
general ice matter circle pair include divide syllable felt perhaps pick sudden count square reason
length represent art subject region energy hunt probable bed brother egg ride cell believe fraction
forest sit race window store summer train sleep prove lone exercise wall catch mount wish sky board
joy winter sat written wild instrument kept glass grass cow job edge sign visit past soft fun bright
gas weather month million bear finish happy hope flower clothe strange gone jump baby eight village
meet root buy raise solve metal whether push seven paragraph third shall held hair describe cook
floor either result burn hill safe cat century consider type law bit coast copy phrase silent tall
sand soil roll temperature finger industry value fight lie beat excite natural view sense ear else
quite broke case middle kill son lake moment scale loud spring observe child straight consonant
nation dictionary milk speed method organ pay age section dress cloud surprise quiet stone tiny
climb cool design poor lot experiment bottom key iron single stick flat twenty skin smile crease
hole trade melody trip office receive row mouth exact symbol die least trouble shout except wrote
seed tone join suggest clean break lady yard rise bad blow oil blood touch grew cent mix team wire
cost lost brown wear garden equal sent choose fell fit flow fair bank collect save control decimal`)

// sentence returns n words from r, Zipf-weighted towards the start of the vocabulary, with
// a capital first letter and a full stop.
func sentence(r *rand.Rand, z *rand.Zipf, n int) string {
	var b strings.Builder
	for i := range n {
		w := englishWords[z.Uint64()]
		if i == 0 {
			b.WriteString(strings.ToUpper(w[:1]))
			b.WriteString(w[1:])
		} else {
			b.WriteByte(' ')
			b.WriteString(w)
		}
	}
	if r.IntN(5) == 0 {
		b.WriteByte('?')
	} else {
		b.WriteByte('.')
	}
	return b.String()
}

// paragraph returns about chars characters of English-like sentences.
func paragraph(r *rand.Rand, z *rand.Zipf, chars int) string {
	var b strings.Builder
	for b.Len() < chars {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sentence(r, z, 4+r.IntN(14)))
	}
	return b.String()
}

// promptGen produces distinct chat prompts in a ChatML-like template: one of a pool of
// system prompts (about 400-1600 chars), then user and assistant turns. About half the
// prompts continue an earlier conversation (the earlier prompt, the assistant's answer and
// a new user turn), as multi-turn chat does; the rest start a new one.
type promptGen struct {
	r       *rand.Rand
	z       *rand.Zipf
	systems []string
	convs   []string // recent conversations, by slot
}

func newPromptGen(seed uint64, systems int) *promptGen {
	r := rand.New(rand.NewPCG(seed, 11))
	g := &promptGen{r: r, z: rand.NewZipf(r, 1.1, 8, uint64(len(englishWords)-1)), convs: make([]string, 256)}
	for range systems {
		g.systems = append(g.systems, "<|im_start|>system\n"+paragraph(r, g.z, 400+r.IntN(1200))+"<|im_end|>\n")
	}
	return g
}

// next returns the next prompt.
func (g *promptGen) next() string {
	slot := g.r.IntN(len(g.convs))
	conv := g.convs[slot]
	if conv == "" || len(conv) > 6000 || g.r.IntN(2) == 0 {
		conv = g.systems[g.r.IntN(len(g.systems))]
	} else {
		conv += paragraph(g.r, g.z, 100+g.r.IntN(300)) + "<|im_end|>\n"
	}
	conv += "<|im_start|>user\n" + paragraph(g.r, g.z, 40+g.r.IntN(400)) + "<|im_end|>\n<|im_start|>assistant\n"
	g.convs[slot] = conv
	return conv
}
