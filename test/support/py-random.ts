/**
 * A faithful port of CPython 3.11's `random` module (Mersenne Twister MT19937 plus the
 * pure-Python layer in Lib/random.py), so an experiment seeded with an integer draws exactly
 * the numbers `random.Random(seed)` draws in Python 3. Every method consumes generator words in
 * the same order and count as its Python namesake; that, not just the distribution, is what
 * keeps two runs of one experiment comparable across the languages.
 */

const stateWords = 624; // MT19937 N
const twistOffset = 397; // MT19937 M
const matrixA = 0x9908b0df;
const upperMask = 0x80000000;
const lowerMask = 0x7fffffff;
const twoPow26 = 67108864;
const twoPow32 = 4294967296;
const twoPow53 = 9007199254740992;

/** A generator that draws exactly what CPython 3.11's `random.Random(seed)` draws. */
export class PyRandom {
  private readonly state = new Uint32Array(stateWords);
  private index = stateWords;

  /** Seed as `random.seed(seed)` does for an int: init_by_array over the 32-bit chunks of |seed|. */
  constructor(seed: number | bigint) {
    if (typeof seed === 'number' && !(Number.isSafeInteger(seed) && seed >= 0)) {
      throw new RangeError(`seed must be a non-negative safe integer, got ${seed}`);
    }
    let rest = BigInt(seed);
    if (rest < 0n) throw new RangeError(`seed must be non-negative, got ${rest}`);
    // Least significant chunk first; a zero seed is the one-word key [0], as in CPython.
    const key: number[] = [];
    do {
      key.push(Number(rest & 0xffffffffn));
      rest >>= 32n;
    } while (rest > 0n);
    this.initByArray(key);
  }

  /** `random()`: a float in [0, 1) with 53 random bits, from two 32-bit words. */
  random(): number {
    const a = this.nextWord() >>> 5;
    const b = this.nextWord() >>> 6;
    return (a * twoPow26 + b) / twoPow53;
  }

  /** `getrandbits(k)`: a k-bit non-negative integer, filled least significant word first. */
  getrandbits(k: number): bigint {
    assertCount('k', k);
    if (k <= 53) return BigInt(this.randbits(k));
    let result = 0n;
    for (let shift = 0; shift < k; shift += 32) {
      const bitsLeft = k - shift;
      const word = bitsLeft < 32 ? this.nextWord() >>> (32 - bitsLeft) : this.nextWord();
      result |= BigInt(word) << BigInt(shift);
    }
    return result;
  }

  /** `_randbelow(n)` (the getrandbits variant): an integer in [0, n) by rejection sampling. */
  randbelow(n: number): number {
    if (!(Number.isSafeInteger(n) && n > 0)) {
      throw new RangeError(`randbelow needs a positive safe integer, got ${n}`);
    }
    const k = bitLength(n);
    let r = this.randbits(k);
    while (r >= n) r = this.randbits(k);
    return r;
  }

  /** `randrange(stop)` or `randrange(start, stop, step)`: a random member of that range. */
  randrange(start: number, stop?: number, step = 1): number {
    assertSafeInteger('start', start);
    if (stop === undefined) {
      if (step !== 1) throw new TypeError('Missing a non-None stop argument');
      if (start > 0) return this.randbelow(start);
      throw new RangeError('empty range for randrange()');
    }
    assertSafeInteger('stop', stop);
    assertSafeInteger('step', step);
    const width = stop - start;
    assertSafeInteger('stop - start', width);
    if (step === 1) {
      if (width > 0) return start + this.randbelow(width);
      throw new RangeError(`empty range for randrange() (${start}, ${stop}, ${width})`);
    }
    if (step === 0) throw new RangeError('zero step for randrange()');
    // The count of members, by Python's floor division. Both operands are safe integers, so
    // the float quotient cannot round across an integer and Math.floor is exact.
    const numerator = step > 0 ? width + step - 1 : width + step + 1;
    assertSafeInteger('range size', numerator);
    const n = Math.floor(numerator / step);
    if (n <= 0) throw new RangeError('empty range for randrange()');
    const result = start + step * this.randbelow(n);
    assertSafeInteger('randrange result', result);
    return result;
  }

  /** `randint(a, b)`: an integer in [a, b], both ends included. */
  randint(a: number, b: number): number {
    return this.randrange(a, b + 1);
  }

  /** `choice(seq)`: one element of a non-empty sequence. */
  choice<T>(seq: ArrayLike<T>): T {
    if (seq.length === 0) throw new RangeError('Cannot choose from an empty sequence');
    return seq[this.randbelow(seq.length)]!;
  }

  /** `shuffle(x)`: shuffle the array in place, Fisher-Yates from the last index down. */
  shuffle<T>(x: T[]): void {
    for (let i = x.length - 1; i >= 1; i--) {
      const j = this.randbelow(i + 1);
      const held = x[i]!;
      x[i] = x[j]!;
      x[j] = held;
    }
  }

  /**
   * `sample(population, k)`: k distinct positions of the population, in selection order. Like
   * Python, it tracks a pool when the population is small and a set of picks when it is large;
   * the two branches draw differently, so the threshold is computed exactly as 3.11 does.
   */
  sample<T>(population: ArrayLike<T>, k: number): T[] {
    const n = population.length;
    if (!(Number.isSafeInteger(k) && k >= 0 && k <= n)) {
      throw new RangeError('Sample larger than population or is negative');
    }
    let setsize = 21; // size of a small set minus size of an empty list
    if (k > 5) setsize += 4 ** Math.ceil(pyLog(k * 3) / pyLog(4)); // table size for big sets
    const result: T[] = new Array(k);
    if (n <= setsize) {
      const pool = Array.from(population);
      for (let i = 0; i < k; i++) {
        const j = this.randbelow(n - i);
        result[i] = pool[j]!;
        pool[j] = pool[n - i - 1]!; // move a non-selected item into the vacancy
      }
      return result;
    }
    const selected = new Set<number>();
    for (let i = 0; i < k; i++) {
      let j = this.randbelow(n);
      while (selected.has(j)) j = this.randbelow(n);
      selected.add(j);
      result[i] = population[j]!;
    }
    return result;
  }

  /** `uniform(a, b)`: `a + (b - a) * random()`. */
  uniform(a: number, b: number): number {
    return a + (b - a) * this.random();
  }

  /** `expovariate(lambd)`: `-log(1.0 - random()) / lambd`, with Python's own `log`. */
  expovariate(lambd: number): number {
    return -pyLog(1.0 - this.random()) / lambd;
  }

  /** `getrandbits(k)` for k <= 53 as an exact number: the word order of the general case. */
  private randbits(k: number): number {
    if (k === 0) return 0;
    if (k <= 32) return this.nextWord() >>> (32 - k);
    const low = this.nextWord();
    const high = this.nextWord() >>> (64 - k);
    return high * twoPow32 + low;
  }

  /** `init_by_array` from _randommodule.c, on top of `init_genrand(19650218)`. */
  private initByArray(key: readonly number[]): void {
    const mt = this.state;
    mt[0] = 19650218;
    for (let i = 1; i < stateWords; i++) {
      const prev = mt[i - 1]!;
      mt[i] = Math.imul(1812433253, prev ^ (prev >>> 30)) + i;
    }
    let i = 1;
    let j = 0;
    for (let count = Math.max(stateWords, key.length); count > 0; count--) {
      const prev = mt[i - 1]!;
      mt[i] = (mt[i]! ^ Math.imul(prev ^ (prev >>> 30), 1664525)) + key[j]! + j;
      i++;
      j++;
      if (i >= stateWords) {
        mt[0] = mt[stateWords - 1]!;
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let count = stateWords - 1; count > 0; count--) {
      const prev = mt[i - 1]!;
      mt[i] = (mt[i]! ^ Math.imul(prev ^ (prev >>> 30), 1566083941)) - i;
      i++;
      if (i >= stateWords) {
        mt[0] = mt[stateWords - 1]!;
        i = 1;
      }
    }
    mt[0] = 0x80000000; // MSB is 1, assuring a non-zero initial state
    this.index = stateWords;
  }

  /** `genrand_uint32`: the next tempered 32-bit word, regenerating all 624 when spent. */
  private nextWord(): number {
    const mt = this.state;
    if (this.index >= stateWords) {
      for (let kk = 0; kk < stateWords; kk++) {
        const y = (mt[kk]! & upperMask) | (mt[(kk + 1) % stateWords]! & lowerMask);
        mt[kk] = mt[(kk + twistOffset) % stateWords]! ^ (y >>> 1) ^ (y & 1 ? matrixA : 0);
      }
      this.index = 0;
    }
    let y = mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }
}

/** The number of bits in a positive safe integer, as Python's `int.bit_length()`. */
function bitLength(n: number): number {
  if (n < twoPow32) return 32 - Math.clz32(n);
  return 32 + (32 - Math.clz32(Math.floor(n / twoPow32)));
}

function assertSafeInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} must be a safe integer, got ${value}`);
}

function assertCount(name: string, value: number): void {
  if (!(Number.isSafeInteger(value) && value >= 0)) {
    throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  }
}

/*
 * Python's `math.log` is the C library's `log`. V8's `Math.log` is a different algorithm and
 * disagrees in the last bit for about 7% of the inputs `expovariate` sees, so the log below is
 * a port of the one Python calls on our machines: glibc 2.36's `__log_fma` (Debian 12, x86-64
 * with FMA; the ARM optimized-routines algorithm). Each fused multiply-add sits where the
 * compiled binary has one, and the constants were read out of that libm's `__log_data`. On a CPU
 * without FMA, glibc picks another variant, and Python's own log then differs for about one
 * input in 10,000.
 */

const ln2hi = 0.6931471805598903;
const ln2lo = 5.497923018708371e-14;
// log1p(r) - r ~ r^2 * (A0 + r*A1 + r^2*A2 + r^3*A3 + r^4*A4), for |r| < 1/256.
const logPoly = [
  -0.5000000000000001, 0.33333333331825593, -0.2499999999622955, 0.20000304511814496,
  -0.16667054827627667,
] as const;
// log1p(r) ~ r + r^2 * (B0 + r*B1 + ... + r^10*B10), for x = 1 + r close to 1.
const logPoly1 = [
  -0.5, 0.3333333333333352, -0.24999999999998432, 0.19999999999320328, -0.16666666669929706,
  0.14285715076560868, -0.12499997863982555, 0.11110712032936046, -0.10000486757818193,
  0.09181994006195467, -0.08328363062289341,
] as const;
// 128 pairs (1/c, log(c)), c near the centre of the i-th subinterval of [0x1.6p-1, 0x1.6p0).
const logTable = [
  1.4504249240398293, -0.3718565645633589, 1.442253508327276, -0.36620682668944937,
  1.4341736174350004, -0.3605888069791945, 1.426183816329995, -0.3550022171419869,
  1.4182825527052965, -0.34944666968829097, 1.4104682921759335, -0.3439217713603284,
  1.4027396147468003, -0.3384271921261188, 1.3950954438932313, -0.332962831494342,
  1.3875338232485754, -0.32752794345742586, 1.3800539211058593, -0.32212257167088865,
  1.3726542695419708, -0.3167462884799761, 1.3653332798446802, -0.3113985598928366,
  1.358090204587874, -0.3060794515165526, 1.3509234892132138, -0.300788424667644,
  1.3438320840699889, -0.2955252968476998, 1.3368146974742003, -0.29028969275850613,
  1.329870114677736, -0.2850812793277555, 1.322997339161106, -0.27989987391470095,
  1.316195352741367, -0.27474526621870154, 1.3094628125672239, -0.2696169863701243,
  1.3027990455471041, -0.26451506180308115, 1.2962024229438942, -0.2594387762767383,
  1.2896726275815547, -0.2543884090981692, 1.2832080305745537, -0.24936321635129843,
  1.276807885983376, -0.24436312405975968, 1.2704714060687552, -0.23938801747897287,
  1.2641976054949482, -0.23443761696705678, 1.257985357514882, -0.22951151871518505,
  1.2518337750655457, -0.2246094963439873, 1.2457421919097305, -0.21973149037705753,
  1.2397094966625508, -0.2148770752847895, 1.2337348463589233, -0.210046029103637,
  1.2278176973028803, -0.20523836373934046, 1.2219570190618474, -0.20045368751368642,
  1.2161519732977757, -0.1956917537758045, 1.2104018095009725, -0.19095237845203883,
  1.204705805718973, -0.18623539250290833, 1.1990631185441964, -0.18154051731551135,
  1.1934733004462308, -0.1768677957431919, 1.1879350812847385, -0.17221657406412305,
  1.1824481322833125, -0.16758697765942543, 1.1770114976921955, -0.16297859687290384,
  1.1716248121809465, -0.15839151377804228, 1.1662869231674715, -0.15382513241456763,
  1.1609977486762766, -0.14927976358922024, 1.1557563220795803, -0.14475495398119165,
  1.1505619105480347, -0.14025044090817573, 1.1454138888505974, -0.1357660466685502,
  1.140311877374656, -0.1313018016355727, 1.1352550225747513, -0.12685731518763532,
  1.1302429094831266, -0.1224325737671279, 1.1252747693068048, -0.11802724521862729,
  1.1203501571039876, -0.11364127671663482, 1.1154683327680124, -0.10927434611278386,
  1.1106291463292157, -0.10492665324943573, 1.1058315813301596, -0.10059761422644442,
  1.1010752177696026, -0.09628717309055901, 1.0963597137952512, -0.09199534069557558,
  1.0916844827550398, -0.08772190036688698, 1.0870487291277784, -0.08346643613867855,
  1.082452357388312, -0.07922916827544668, 1.0778948225025884, -0.0750099004750382,
  1.0733751731601076, -0.07080805133352897, 1.068893585073351, -0.06662408085151128,
  1.0644491706655506, -0.06245745471915143, 1.0600414846328305, -0.0583080438042316,
  1.0556701316181605, -0.05417576112313327, 1.051334750556926, -0.050060547896805474,
  1.0470347288442157, -0.045962101199052086, 1.0427699229652954, -0.04188056008865715,
  1.0385395013738175, -0.03781540056183985, 1.034343418940345, -0.03376684757915882,
  1.0301811073173315, -0.029734619131772888, 1.026052043621297, -0.025718470239212365,
  1.0219561082336197, -0.021718543925430822, 1.0178926505784922, -0.01773446126981071,
  1.0138614436244586, -0.013766252464051831, 1.0098620186501341, -0.009813706322574944,
  1.0058938559734134, -0.005876555150052809, 1.00195696235014, -0.0019550499938532084,
  0.9961089923088509, 0.0038985973556009412, 0.9884170338185201, 0.011650571286395461,
  0.9808429191005297, 0.019342955478919066, 0.9733840169987446, 0.0269766014846482,
  0.9660377568876556, 0.034552359728422744, 0.9588014945307369, 0.04207121767183253,
  0.9516728569073111, 0.049533940950141186, 0.9446494635965822, 0.056941358295944156,
  0.9377288993026223, 0.06429439168346107, 0.9309091073790681, 0.0715936354946507,
  0.924187681612722, 0.07884010933776153, 0.9175626765599192, 0.08603438905970506,
  0.9110320403624034, 0.09317721180013905, 0.9045935839762024, 0.10026951462748457,
  0.8982456375922825, 0.10731170956330516, 0.8919860966782501, 0.11430473320717738,
  0.8858131121185129, 0.12124928503033061, 0.879725075760676, 0.12814583422959913,
  0.8737201372634685, 0.1349951636851756, 0.8677966405782273, 0.1417978768189414,
  0.8619528050060739, 0.14855476039031146, 0.8561872354420692, 0.1552661937658968,
  0.8504983927816893, 0.16193275688146969, 0.8448844572790304, 0.16855539792220497,
  0.8393442741575965, 0.1751343179947753, 0.8338762249349438, 0.1816702989864325,
  0.8284789320557778, 0.18816387146023317, 0.8231510800065832, 0.1946155228479256,
  0.8178913903778707, 0.20102572579389744, 0.8126984007245374, 0.2073952090795501,
  0.8075710029460227, 0.21372429840596396, 0.8025078881160415, 0.2200135945981856,
  0.7975077379364331, 0.22626374162859975, 0.792569604966373, 0.23247494747693054,
  0.7876923641254114, 0.23864766620658884, 0.7828746724940998, 0.24478265647405806,
  0.7781155388790811, 0.25088025827324145, 0.7734139557869777, 0.2569408552510595,
  0.7687687179914933, 0.26296511155101143, 0.7641790698041854, 0.2689531327189343,
  0.7596438763692399, 0.27490553924610595, 0.7551621951078668, 0.2808227248478943,
  0.7507331780216866, 0.286704979267256, 0.7463557196361751, 0.29255295645509705,
  0.7420289364869653, 0.2983670386142876, 0.7377521537065876, 0.30414734587282055,
  0.7335242966002608, 0.30989455774829366, 0.729344777457841, 0.31560871301871884,
] as const;
const logOffsetHigh = 0x3fe60000; // high word of 0x1.6p-1, where the table's range starts
const nearOneLow = 0.9375; // 1 - 2^-4
const nearOneHigh = 1.064697265625; // 1 + 0x1.09p-4
const smallestNormal = 2.2250738585072014e-308; // 2^-1022
const twoPow27 = 134217728;

const bits = new DataView(new ArrayBuffer(8));

/** Python's `math.log(x)` bit for bit (glibc 2.36 `__log_fma`); throws where Python raises. */
export function pyLog(x: number): number {
  if (Number.isNaN(x) || x === Number.POSITIVE_INFINITY) return x;
  if (!(x > 0)) throw new RangeError(`math domain error: log(${x})`);
  if (x >= nearOneLow && x < nearOneHigh) return logNearOne(x);
  // x = 2^k * z with z in [0x1.6p-1, 0x1.6p0); a subnormal x is scaled up by 2^52 first.
  const subnormal = x < smallestNormal;
  bits.setFloat64(0, subnormal ? x * 4503599627370496 : x, true);
  const high = bits.getUint32(4, true);
  const offsetHigh = (high - logOffsetHigh) | 0;
  const i = (offsetHigh >>> 13) & 0x7f;
  const k = (offsetHigh >> 20) - (subnormal ? 52 : 0);
  bits.setUint32(4, high - (offsetHigh & 0xfff00000), true);
  const z = bits.getFloat64(0, true);
  const invc = logTable[2 * i]!;
  const logc = logTable[2 * i + 1]!;
  const [a0, a1, a2, a3, a4] = logPoly;

  // log(x) = log1p(z/c - 1) + log(c) + k*ln2, with r = z/c - 1 and |r| < 1/256.
  const r = fma(z, invc, -1);
  const w = fma(k, ln2hi, logc);
  const hi = r + w;
  const lo = fma(k, ln2lo, w - hi + r);
  const r2 = r * r;
  const r3 = r * r2;
  const tail = fma(fma(r, a4, a3), r2, fma(r, a2, a1));
  return fma(r3, tail, fma(r2, a0, lo)) + hi;
}

/** glibc's path for x within about 1/16 of 1, where the table's rounding would cost accuracy. */
function logNearOne(x: number): number {
  if (x === 1) return 0;
  const [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10] = logPoly1;
  const r = x - 1;
  const r2 = r * r;
  const r3 = r * r2;
  const b1to3 = fma(r2, b3, fma(r, b2, b1));
  const b4to6 = fma(r2, b6, fma(r, b5, b4));
  const b7to10 = fma(r3, b10, fma(r2, b9, fma(r, b8, b7)));
  const poly = fma(fma(b7to10, r3, b4to6), r3, b1to3);
  // r = rhi + rlo with rhi holding the top half of r's bits; B0 = -1/2 scales exactly.
  const rhi = r + r * twoPow27 - r * twoPow27;
  const rlo = r - rhi;
  const rhi2 = rhi * rhi;
  const hi = r + rhi2 * b0;
  const lo = fma(b0 * rlo, rhi + r, r - hi + rhi2 * b0);
  return hi + fma(poly, r3, lo);
}

/*
 * A fused multiply-add, round(a*b + c) with one rounding, which JavaScript lacks. This is
 * Boldo and Melquiond's emulation ("Emulation of FMA and correctly rounded sums: proved
 * algorithms using rounding to odd", IEEE TC 2008): the exact product and sum as error-free
 * pairs, their small parts added with round-to-odd, then one round-to-nearest. It is exact
 * when nothing overflows or underflows, which holds for every operand `pyLog` passes.
 */
const splitter = 134217729; // 2^27 + 1: Veltkamp's split of a double into two 26-bit halves

function fma(a: number, b: number, c: number): number {
  const product = a * b;
  const productError = exactProductError(a, b, product);
  const sum = product + c;
  const sumError = exactSumError(product, c, sum);
  return sum + addRoundingToOdd(sumError, productError);
}

/** a*b - product exactly (Dekker's product, with Veltkamp's splitting). */
function exactProductError(a: number, b: number, product: number): number {
  const aSplit = splitter * a;
  const aHigh = aSplit - (aSplit - a);
  const aLow = a - aHigh;
  const bSplit = splitter * b;
  const bHigh = bSplit - (bSplit - b);
  const bLow = b - bHigh;
  return aHigh * bHigh - product + aHigh * bLow + aLow * bHigh + aLow * bLow;
}

/** a + b - sum exactly (Knuth's TwoSum). */
function exactSumError(a: number, b: number, sum: number): number {
  const bVirtual = sum - a;
  return a - (sum - bVirtual) + (b - bVirtual);
}

/** a + b rounded to odd: when inexact, the neighbour of the exact sum whose last bit is 1. */
function addRoundingToOdd(a: number, b: number): number {
  const sum = a + b;
  const error = exactSumError(a, b, sum);
  if (error === 0) return sum;
  bits.setFloat64(0, sum, true);
  const low = bits.getUint32(0, true);
  if ((low & 1) === 1) return sum;
  // The even neighbour came out; step one unit in the last place towards the exact sum.
  const away = sum > 0 === error > 0;
  if (away) {
    bits.setUint32(0, low + 1, true);
  } else if (low === 0) {
    bits.setUint32(0, 0xffffffff, true);
    bits.setUint32(4, bits.getUint32(4, true) - 1, true);
  } else {
    bits.setUint32(0, low - 1, true);
  }
  return bits.getFloat64(0, true);
}
