import { describe, expect, test } from 'vitest';
import { PyRandom, pyLog } from '../support/py-random.ts';

/*
 * Every expected value here was printed by CPython 3.11.7 on our machine kind (Debian 12, x86-64
 * with FMA, glibc 2.36) by the one-liner above its table, and pasted unchanged. Floats are
 * compared exactly: an experiment replayed in TypeScript must draw the same doubles as Python,
 * not nearby ones, or its later draws and decisions drift apart.
 */

type SeedRow<T> = [seed: number, expected: T];

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

function draws<T>(count: number, draw: () => T): T[] {
  return Array.from({ length: count }, draw);
}

function shuffled(r: PyRandom, items: number[]): number[] {
  r.shuffle(items);
  return items;
}

/** The calls of the `experiments` one-liner, in its order, on one generator. */
function runExperiment(r: PyRandom): unknown[] {
  return [
    r.random(),
    r.randint(1, 6),
    r.expovariate(1 / 5400),
    r.choice('abcdefg'),
    shuffled(r, range(8)),
    r.sample(range(1000), 7),
    r.getrandbits(70),
    r.randrange(0, 100, 7),
    r.randrange(50, 0, -3),
    r.uniform(-2.5, 2.5),
    r.randrange(2 ** 40),
    r.sample(range(30), 10),
    r.sample(range(200), 10),
    r.randint(51, 300),
    r.random(),
  ];
}

// python3 -c "import random; print([[s, [r.random() for _ in range(10)]] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const firstRandoms: SeedRow<number[]>[] = [
  [0, [
    0.8444218515250481, 0.7579544029403025, 0.420571580830845, 0.25891675029296335,
    0.5112747213686085, 0.4049341374504143, 0.7837985890347726, 0.30331272607892745,
    0.4765969541523558, 0.5833820394550312,
  ]],
  [1, [
    0.13436424411240122, 0.8474337369372327, 0.763774618976614, 0.2550690257394217,
    0.49543508709194095, 0.4494910647887381, 0.651592972722763, 0.7887233511355132,
    0.0938595867742349, 0.02834747652200631,
  ]],
  [42, [
    0.6394267984578837, 0.025010755222666936, 0.27502931836911926, 0.22321073814882275,
    0.7364712141640124, 0.6766994874229113, 0.8921795677048454, 0.08693883262941615,
    0.4219218196852704, 0.029797219438070344,
  ]],
  [4471, [
    0.9160348355972238, 0.6531233645655459, 0.08774396499091153, 0.8495870094668057,
    0.5139814661389996, 0.7312344081998347, 0.6238524775719092, 0.4626579663481376,
    0.6784648543695834, 0.6167791806391334,
  ]],
  [2 ** 40 + 3, [
    0.21978710637116716, 0.5494687768352203, 0.09461190973523603, 0.9814015277038539,
    0.9029950700508493, 0.7740658553386074, 0.23418433570332553, 0.5568055999257219,
    0.7411777923231427, 0.25922585779041674,
  ]],
];

// python3 -c "import random; print([[s, [r.getrandbits(32) for _ in range(10)]] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const firstBits32: SeedRow<bigint[]>[] = [
  [0, [
    3626764237n, 1654615998n, 3255389356n, 3823568514n, 1806341205n, 173879092n, 1112038970n,
    4146640122n, 2195908194n, 2087043557n,
  ]],
  [1, [
    577090037n, 2444712010n, 3639700191n, 3445702192n, 3280387012n, 271041745n, 1095513148n,
    506456969n, 2127877499n, 3268308804n,
  ]],
  [42, [
    2746317213n, 478163327n, 107420369n, 3184935163n, 1181241943n, 1051802512n, 958682846n,
    599310825n, 3163119785n, 440213415n,
  ]],
  [4471, [
    3934339655n, 1729638777n, 2805143505n, 411042445n, 376857465n, 2692049852n, 3648948429n,
    639731731n, 2207533595n, 2659810833n,
  ]],
  [2 ** 40 + 3, [
    943978446n, 261273136n, 2359950418n, 3580981848n, 406355048n, 2432688654n, 4215087477n,
    1306272805n, 3878334283n, 2995421218n,
  ]],
];

// python3 -c "import random; print([[s, [r.getrandbits(64) for _ in range(10)]] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const firstBits64: SeedRow<bigint[]>[] = [
  [0, [
    7106521602475165645n, 16422101724900707500n, 746805015404516437n, 17809683713383489082n,
    8963783824838420066n, 16938433693753131896n, 15308084094301570617n, 17852758786694309641n,
    6604845167042249220n, 16448235973081859711n,
  ]],
  [1, [
    10499958131665514997n, 14799178230035213023n, 1164115433906158532n, 2175216119781798972n,
    14037279428536751483n, 8711387064946514083n, 7002664860023442459n, 3872982626502034966n,
    8999366892653588108n, 16478790771768674216n,
  ]],
  [42, [
    2053695854357871005n, 13679192365072849617n, 4517457392071889495n, 2574020394472462046n,
    1890702223848595625n, 13662908291426823533n, 10060236952204337488n, 10892664235628797826n,
    586287033698423193n, 1728372192399379054n,
  ]],
  [4471, [
    7428741985042776647n, 1765413861348022225n, 11562266073918497657n, 2747626866507417805n,
    11423800543489051163n, 16675974449923763605n, 2709321628477869004n, 1555936657552752827n,
    5189739867209195378n, 5590951449466322318n,
  ]],
  [2 ** 40 + 3, [
    1122159575387338702n, 15380199927089593426n, 10448318210686614632n, 5610398981344272757n,
    12865236172932820811n, 7856921357369028114n, 8693759547576385844n, 10324778409024737245n,
    6081302506065744887n, 12386635289926082620n,
  ]],
];

// python3 -c "import random; print([[s, [r.getrandbits(100) for _ in range(10)]] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const firstBits100: SeedRow<bigint[]>[] = [
  [0, [
    1169245609517217401678349469645n, 1208935935994293442776782246997n,
    1141276462758851372969594381922n, 1212453347278431371654525814329n,
    1155414562281657275977595765252n, 198441737587687207744109680147n,
    139109141237965358711594976883n, 1208269594694528803942708375100n,
    949374075050023004062815166826n, 229933275692058304150478939550n,
  ]],
  [1, [
    1017878568110080782349472477685n, 99436813185968347955962756036n,
    590209488520255358040687302011n, 300173589674248222863405272091n,
    1111440193305707555022300458636n, 747340801974485348169054204850n,
    871676646108158023498549479813n, 1007904241199015632446668727597n,
    154120222789036265674072140081n, 2423588656278701582244377401n,
  ]],
  [42, [
    873491343714207852616756591005n, 176140902141063639299770569303n,
    925123444424254823561077285033n, 719941466287131323558231662928n,
    81588941661909768552652673433n, 753091833484192460678735898763n,
    887263329113174494581759872947n, 518543687442706248304305296265n,
    363599087488689528016034778080n, 951252835099050638285506794891n,
  ]],
  [4471, [
    130973926848456669550671381063n, 225767542848018469832504009593n,
    1167128633593753382280131529243n, 115883703511595068554680257484n,
    365778931300683129627297701746n, 555100597118568650971657376377n,
    203005686807582026152383436593n, 948152424589230281601110792929n,
    1128527896243239616324067100061n, 1148372496053393109915634850460n,
  ]],
  [2 ** 40 + 3, [
    1073499514074048427438230468558n, 394667290004022764536749128808n,
    536696790562581390468317884235n, 677939984887138673187326492980n,
    812819613657779902427221054455n, 387403325344137102382057945164n,
    1056579680230073627919631535578n, 474532982511619438876399892761n,
    598566269400603237965217083773n, 118360593285292762553357582726n,
  ]],
];

// python3 -c "import random; print([[s, [r.randint(5, 50) for _ in range(20)]] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const randints5to50: SeedRow<number[]>[] = [
  [0, [29, 31, 7, 21, 37, 36, 30, 24, 35, 27, 42, 18, 37, 13, 23, 13, 11, 44, 21, 39]],
  [1, [13, 41, 9, 21, 12, 36, 33, 35, 46, 29, 18, 11, 36, 6, 29, 32, 43, 5, 49, 33]],
  [42, [45, 12, 6, 22, 20, 19, 13, 11, 48, 39, 10, 42, 32, 7, 6, 10, 18, 19, 37, 43]],
  [4471, [30, 46, 11, 10, 45, 14, 37, 44, 44, 14, 34, 10, 48, 23, 44, 24, 17, 5, 33, 7]],
  [2 ** 40 + 3, [19, 8, 40, 11, 41, 24, 49, 32, 19, 35, 40, 40, 26, 21, 47, 42, 24, 21, 35, 26]],
];

// python3 -c "import random; print([[s, [r.randint(51, 300) for _ in range(10)]] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const randints51to300: SeedRow<number[]>[] = [
  [0, [267, 149, 245, 278, 158, 61, 117, 298, 181, 175]],
  [1, [85, 196, 267, 256, 246, 67, 116, 81, 177, 245]],
  [42, [214, 79, 57, 240, 121, 113, 108, 86, 239, 77]],
  [4471, [285, 154, 218, 75, 73, 211, 268, 89, 182, 209]],
  [2 ** 40 + 3, [107, 66, 191, 264, 75, 195, 128, 282, 229, 249]],
];

// python3 -c "import random; print([[s, (lambda xs: (r.shuffle(xs), xs)[1])(list(range(20)))] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const shuffled20: SeedRow<number[]>[] = [
  [0, [10, 18, 16, 14, 0, 17, 11, 2, 3, 9, 5, 7, 4, 19, 6, 15, 8, 1, 13, 12]],
  [1, [11, 5, 17, 19, 9, 0, 16, 1, 15, 6, 10, 13, 14, 12, 7, 3, 8, 2, 18, 4]],
  [42, [19, 5, 14, 4, 9, 13, 15, 18, 6, 12, 17, 10, 1, 11, 2, 16, 7, 8, 0, 3]],
  [4471, [17, 5, 6, 19, 13, 14, 8, 0, 18, 11, 9, 15, 10, 1, 7, 16, 4, 2, 3, 12]],
  [2 ** 40 + 3, [0, 10, 18, 13, 4, 15, 2, 5, 8, 19, 16, 6, 12, 11, 14, 9, 3, 17, 1, 7]],
];

// python3 -c "import random; print([[s, r.sample(range(100), 5)] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const samples5of100: SeedRow<number[]>[] = [
  [0, [49, 97, 53, 5, 33]],
  [1, [17, 72, 97, 8, 32]],
  [42, [81, 14, 3, 94, 35]],
  [4471, [51, 83, 12, 11, 80]],
  [2 ** 40 + 3, [28, 7, 70, 12, 72]],
];

// python3 -c "import random; print([[s, r.sample(range(10), 9)] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const samples9of10: SeedRow<number[]>[] = [
  [0, [6, 9, 0, 2, 4, 3, 5, 1, 8]],
  [1, [2, 1, 4, 0, 3, 5, 7, 9, 8]],
  [42, [1, 0, 4, 9, 6, 5, 8, 2, 3]],
  [4471, [6, 1, 8, 5, 7, 4, 9, 3, 0]],
  [2 ** 40 + 3, [3, 0, 1, 4, 2, 9, 7, 6, 5]],
];

// python3 -c "import random; print([[s, [r.expovariate(1 / 5400) for _ in range(5)]] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const expovariates: SeedRow<number[]>[] = [
  [0, [
    10047.278399752207, 7660.597426047514, 2946.850985924601, 1618.0684859545966,
    3866.1556487426137,
  ]],
  [1, [
    779.1717461913497, 10152.843833271378, 7792.03219687198, 1590.1040712290198, 3693.9174101618414,
  ]],
  [42, [
    5508.325551283926, 136.77573083079002, 1736.7699460048143, 1363.965402618613, 7201.400433163648,
  ]],
  [4471, [
    13377.707688484865, 5717.444830523417, 495.90677609856465, 10229.60068903975,
    3896.1460095785387,
  ]],
  [2 ** 40 + 3, [
    1340.2176623471312, 4305.570641280719, 536.7146301788003, 21517.249515760886,
    12598.164778781951,
  ]],
];

// python3 -c "import random; print([[s, [r.random(), r.randint(1, 6), r.expovariate(1 / 5400), r.choice('abcdefg'), (lambda xs: (r.shuffle(xs), xs)[1])(list(range(8))), r.sample(range(1000), 7), r.getrandbits(70), r.randrange(0, 100, 7), r.randrange(50, 0, -3), r.uniform(-2.5, 2.5), r.randrange(2**40), r.sample(range(30), 10), r.sample(range(200), 10), r.randint(51, 300), r.random()]] for s in (0, 1, 42, 4471, 2**40 + 3) for r in [random.Random(s)]])"
const experiments: SeedRow<unknown[]>[] = [
  [0, [
    0.8444218515250481, 4, 223.16408527734316, 'e', [1, 0, 4, 5, 6, 2, 3, 7],
    [516, 142, 288, 143, 773, 97, 633], 1166765902978185799073n, 98, 38, -0.9492621534033368,
    162048393467, [28, 27, 21, 10, 15, 17, 3, 11, 13, 26],
    [156, 163, 52, 141, 122, 113, 133, 66, 15, 140], 285, 0.014041700164018955,
  ]],
  [1, [
    0.13436424411240122, 1, 1590.1040712290198, 'd', [2, 4, 0, 1, 6, 5, 3, 7],
    [29, 914, 855, 399, 443, 622, 780], 811695589003823968601n, 49, 26, 1.1077001617039128,
    227398206114, [28, 10, 0, 27, 26, 20, 17, 25, 12, 6],
    [108, 185, 7, 135, 56, 195, 112, 126, 141, 59], 139, 0.2308665415409843,
  ]],
  [42, [
    0.6394267984578837, 1, 7306.496789523524, 'b', [7, 6, 2, 4, 0, 5, 1, 3],
    [32, 30, 95, 223, 238, 517, 616], 231714072921731960755n, 77, 11, -1.3977968897965165,
    612416232876, [25, 27, 0, 24, 29, 5, 22, 13, 10, 8], [39, 55, 195, 86, 26, 23, 97, 24, 91, 88],
    205, 0.26452086722201307,
  ]],
  [4471, [
    0.9160348355972238, 6, 543.2277768729667, 'f', [7, 0, 3, 1, 5, 6, 4, 2],
    [694, 288, 631, 310, 952, 202, 6], 203547317903299143947n, 56, 35, 2.3944362756645035,
    403740383900, [15, 28, 12, 6, 10, 26, 29, 11, 7, 9],
    [151, 137, 46, 190, 5, 73, 99, 51, 142, 134], 209, 0.3937312117791604,
  ]],
  [2 ** 40 + 3, [
    0.21978710637116716, 5, 9689.417690763954, 'e', [0, 7, 2, 6, 1, 3, 5, 4],
    [265, 687, 603, 318, 911, 262, 812], 983873889967949858787n, 56, 17, -2.0279546441924823,
    1011700885971, [3, 26, 15, 2, 0, 11, 29, 8, 6, 17], [63, 177, 78, 109, 193, 42, 77, 127, 4, 19],
    216, 0.5368929071697759,
  ]],
];

// Each pair straddles sample's setsize (21, then 21 + 4**ceil(log(3k, 4))). Seed 5 is the first
// seed whose pool and set branches pick different samples in every row, so a wrong threshold fails.
// python3 -c "import random; print([[n, k, random.Random(5).sample(range(n), k)] for n, k in ((21, 5), (22, 5), (85, 6), (86, 6), (1045, 100), (1046, 100))])"
const sampleBranches: [n: number, k: number, expected: number[]][] = [
  [21, 5, [19, 8, 11, 16, 0]],
  [22, 5, [19, 8, 11, 20, 16]],
  [85, 6, [79, 32, 45, 67, 3, 59]],
  [86, 6, [79, 32, 45, 83, 67, 3]],
  [1045, 100, [
    523, 734, 59, 953, 510, 106, 321, 231, 761, 960, 504, 779, 208, 1040, 26, 443, 835, 572, 372,
    797, 326, 147, 142, 632, 1021, 455, 129, 135, 1, 995, 892, 5, 214, 792, 220, 983, 1005, 169,
    893, 170, 296, 1038, 984, 203, 552, 897, 694, 640, 209, 186, 963, 991, 707, 201, 989, 988, 915,
    392, 305, 22, 369, 424, 1007, 958, 149, 270, 66, 339, 308, 837, 617, 600, 3, 610, 998, 724, 346,
    67, 317, 363, 838, 313, 492, 713, 323, 189, 962, 483, 721, 180, 58, 262, 23, 767, 366, 865, 413,
    18, 562, 806,
  ]],
  [1046, 100, [
    523, 734, 59, 953, 510, 106, 321, 231, 761, 960, 504, 779, 208, 26, 443, 835, 572, 372, 797,
    326, 147, 284, 911, 259, 270, 3, 10, 428, 441, 339, 340, 592, 642, 407, 419, 403, 784, 611, 44,
    739, 849, 298, 540, 133, 679, 617, 6, 692, 135, 634, 727, 626, 984, 646, 378, 985, 967, 360,
    116, 524, 46, 732, 827, 37, 857, 749, 770, 18, 927, 95, 370, 402, 243, 503, 946, 705, 726, 513,
    947, 221, 752, 605, 75, 886, 186, 426, 697, 742, 303, 696, 564, 188, 639, 648, 627, 363, 160,
    304, 633, 990,
  ]],
];

// python3 -c "import random; print([[k, random.Random(4471).getrandbits(k)] for k in (0, 1, 31, 32, 33, 53, 54, 64, 65, 100)])"
const bitWidths: [k: number, expected: bigint][] = [
  [0, 0n],
  [1, 1n],
  [31, 1967169827n],
  [32, 3934339655n],
  [33, 3934339655n],
  [53, 3627318564176455n],
  [54, 7254633194013255n],
  [64, 7428741985042776647n],
  [65, 25875486058752328263n],
  [100, 130973926848456669550671381063n],
];

// python3 -c "import random; print([[a, b, random.Random(4471).randrange(a, b)] for a, b in ((0, 2**32 + 1), (0, 2**53 - 1), (-2**52, 2**52 - 1), (7, 2**33 + 7))])"
const wideRanges: [start: number, stop: number, expected: number][] = [
  [0, 4294967297, 3934339655],
  [0, 9007199254740991, 3627318564176455],
  [-4503599627370496, 4503599627370495, -876281063194041],
  [7, 8589934599, 8229306958],
];

// python3 -c "import random; print([[s, (lambda r: [r.random() for _ in range(3)])(random.Random(s))] for s in (2**32 - 1, 2**32, 2**64 + 5)])"
const widerSeeds: [seed: bigint, expected: number[]][] = [
  [4294967295n, [0.6353574441341173, 0.20319993954407756, 0.6073666030347188]],
  [4294967296n, [0.11299430095636409, 0.41782886486292836, 0.0166763664992291]],
  [18446744073709551621n, [0.5105783769365112, 0.8797586528012199, 0.5149365298491138]],
];

// python3 -c "import math; print([[x, math.log(x)] for x in (0.6761672351668376, 0.8761980388503544, 0.9099721897045596, 0.5403792577036415, 0.971350016168982, 0.9505239655564327, 1.0, 0.9375, 1.064697265625, 4.0, 27.0, 5e-324, 2.2250738585072014e-308, 1e300)])"
const logs: [x: number, expected: number][] = [
  [0.6761672351668376, -0.3913148442348043],
  [0.8761980388503544, -0.13216314184913233],
  [0.9099721897045596, -0.09434124070245119],
  [0.5403792577036415, -0.6154840568606508],
  [0.971350016168982, -0.02906840585146087],
  [0.9505239655564327, -0.05074190374033554],
  [1.0, 0.0],
  [0.9375, -0.06453852113757118],
  [1.064697265625, 0.06269050112342274],
  [4.0, 1.3862943611198906],
  [27.0, 3.295836866004329],
  [5e-324, -744.4400719213812],
  [2.2250738585072014e-308, -708.3964185322641],
  [1e+300, 690.7755278982137],
];

describe('PyRandom draws what CPython 3.11 random.Random(seed) draws', () => {
  test.each(firstRandoms)('random: seed %s gives the first 10 floats bit for bit', (seed, expected) => {
    const r = new PyRandom(seed);
    expect(draws(10, () => r.random())).toEqual(expected);
  });

  test.each(firstBits32)('getrandbits(32): seed %s gives the first 10 words', (seed, expected) => {
    const r = new PyRandom(seed);
    expect(draws(10, () => r.getrandbits(32))).toEqual(expected);
  });

  test.each(firstBits64)('getrandbits(64): seed %s fills the low word first', (seed, expected) => {
    const r = new PyRandom(seed);
    expect(draws(10, () => r.getrandbits(64))).toEqual(expected);
  });

  test.each(firstBits100)('getrandbits(100): seed %s truncates the top word', (seed, expected) => {
    const r = new PyRandom(seed);
    expect(draws(10, () => r.getrandbits(100))).toEqual(expected);
  });

  test.each(randints5to50)('randint(5, 50): seed %s gives the first 20 draws', (seed, expected) => {
    const r = new PyRandom(seed);
    expect(draws(20, () => r.randint(5, 50))).toEqual(expected);
  });

  test.each(randints51to300)('randint(51, 300): seed %s gives the first 10 draws', (seed, expected) => {
    const r = new PyRandom(seed);
    expect(draws(10, () => r.randint(51, 300))).toEqual(expected);
  });

  test.each(shuffled20)('shuffle: seed %s orders range(20) as Python does', (seed, expected) => {
    expect(shuffled(new PyRandom(seed), range(20))).toEqual(expected);
  });

  test.each(samples5of100)('sample(range(100), 5): seed %s takes the set branch', (seed, expected) => {
    expect(new PyRandom(seed).sample(range(100), 5)).toEqual(expected);
  });

  test.each(samples9of10)('sample(range(10), 9): seed %s takes the pool branch', (seed, expected) => {
    expect(new PyRandom(seed).sample(range(10), 9)).toEqual(expected);
  });

  test.each(expovariates)('expovariate(1/5400): seed %s gives the first 5 bit for bit', (seed, want) => {
    const r = new PyRandom(seed);
    expect(draws(5, () => r.expovariate(1 / 5400))).toEqual(want);
  });

  test.each(experiments)('interleaved calls: seed %s keeps step with Python throughout', (seed, want) => {
    expect(runExperiment(new PyRandom(seed))).toEqual(want);
  });
});

describe('PyRandom edge cases against CPython 3.11', () => {
  test.each(sampleBranches)('sample(range(%i), %i): the branch threshold is setsize', (n, k, want) => {
    expect(new PyRandom(5).sample(range(n), k)).toEqual(want);
  });

  test.each(bitWidths)('getrandbits(%i): word boundaries match', (k, expected) => {
    expect(new PyRandom(4471).getrandbits(k)).toBe(expected);
  });

  test('getrandbits(0): returns 0 and draws no word', () => {
    const r = new PyRandom(1);
    expect(r.getrandbits(0)).toBe(0n);
    expect(r.random()).toBe(firstRandoms[1]![1][0]);
  });

  test.each(wideRanges)('randrange(%i, %i): a width over 32 bits draws two words', (start, stop, want) => {
    expect(new PyRandom(4471).randrange(start, stop)).toBe(want);
  });

  test.each(widerSeeds)('seed %s: keys of one, two and three words seed as Python', (seed, expected) => {
    const r = new PyRandom(seed);
    expect(draws(3, () => r.random())).toEqual(expected);
  });

  test.each(logs)('pyLog(%s): matches math.log, where V8 Math.log may not', (x, expected) => {
    expect(pyLog(x)).toBe(expected);
  });
});

describe('PyRandom refuses what Python raises on', () => {
  test('randrange: an empty range or a zero step is refused', () => {
    const r = new PyRandom(0);
    expect(() => r.randrange(0)).toThrow(RangeError);
    expect(() => r.randrange(5, 5)).toThrow(RangeError);
    expect(() => r.randrange(0, 10, 0)).toThrow(RangeError);
    expect(() => r.randrange(0, 10, -1)).toThrow(RangeError);
  });

  test('sample and choice: more than the population, or an empty one, is refused', () => {
    const r = new PyRandom(0);
    expect(() => r.sample(range(3), 4)).toThrow(RangeError);
    expect(() => r.choice([])).toThrow(RangeError);
  });

  test('constructor: a negative or fractional seed is refused', () => {
    expect(() => new PyRandom(-1)).toThrow(RangeError);
    expect(() => new PyRandom(1.5)).toThrow(RangeError);
    expect(() => new PyRandom(-1n)).toThrow(RangeError);
  });
});
