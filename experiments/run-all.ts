import { allResultFiles } from './all.ts';
import { writeOrCheck } from './results-file.ts';

/**
 * `npm run experiments` writes every file in results/ from a fresh run; `--check` compares instead
 * and exits non-zero when results/ no longer matches what the scripts produce.
 */

const check = process.argv.includes('--check');
const files = await allResultFiles();
const drifted = writeOrCheck(files, check);
if (check && drifted.length > 0) {
  console.error(`results/ differs from what the experiments produce: ${drifted.join(', ')}. Run npm run experiments.`);
  process.exit(1);
}
console.log(check ? `results/ matches (${files.length} files)` : `wrote ${files.map((f) => `results/${f.name}`).join(', ')}`);
