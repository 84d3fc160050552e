import { PLANTS, type Plant } from './world.ts';
import { runSeeds } from './simulator.ts';

// `npm run simulate -- --seeds N` runs seeds 1..N; `--seed S` replays one seed; `--from S --seeds N`
// runs S..S+N-1; `--plant NAME` switches on a planted bug (for checking that the checks catch it).
// Exits 1 on any violation, or when something that must fire never did.

function parseArgs(argv: readonly string[]): { first: number; count: number; plant?: Plant } {
  let first = 1;
  let count = 100;
  let plant: Plant | undefined;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    const integer = () => {
      if (value === undefined || !/^\d+$/.test(value)) throw new Error(`${flag} needs a whole number`);
      i += 1;
      return Number(value);
    };
    if (flag === '--seeds') count = integer();
    else if (flag === '--from') first = integer();
    else if (flag === '--seed') {
      first = integer();
      count = 1;
    } else if (flag === '--plant') {
      if (!(PLANTS as readonly string[]).includes(value ?? '')) throw new Error(`--plant must be one of ${PLANTS.join(', ')}`);
      plant = value as Plant;
      i += 1;
    } else throw new Error(`unknown argument ${flag}; use --seeds N, --seed S, --from S, --plant NAME`);
  }
  return { first, count, ...(plant ? { plant } : {}) };
}

// A reader that stops early (`| head`) is no failure of the run.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

const args = parseArgs(process.argv.slice(2));
const summary = await runSeeds(args.first, args.count, { ...(args.plant ? { plant: args.plant } : {}), print: (line) => console.log(line) });
process.exitCode = summary.violations > 0 || summary.missing.length > 0 ? 1 : 0;
