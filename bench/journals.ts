// `tsx bench/journals.ts <dir> [small] [large]`: generate the bench's journals once and keep them,
// so one stage (a start-up, the cold scoreboard) can be timed again without a whole bench run.
// Templates come from a short HTTP run against a real server, as in `npm run bench`.
import fs from 'node:fs';
import path from 'node:path';
import { httpStage } from './http-stage.ts';
import { copyJournal, generateJournal } from './journal-gen.ts';
import { SMOKE } from './plans.ts';
import { say } from './stages.ts';

const [dir, small = '100000', large = '1000000'] = process.argv.slice(2);
if (dir === undefined) throw new Error('usage: tsx bench/journals.ts <dir> [small entries] [large entries]');
fs.mkdirSync(dir, { recursive: true });
const work = fs.mkdtempSync(path.join(dir, 'work-'));
try {
  const { templates } = await httpStage(SMOKE, work);
  fs.writeFileSync(path.join(dir, 'templates.json'), JSON.stringify(templates));
  const smallFile = path.join(dir, 'journal-small.sqlite');
  const largeFile = path.join(dir, 'journal-large.sqlite');
  for (const file of [smallFile, largeFile]) fs.rmSync(file, { force: true });
  const next = await generateJournal(smallFile, templates, Number(small));
  copyJournal(smallFile, largeFile);
  await generateJournal(largeFile, templates, Number(large), next);
  say(`wrote ${smallFile} and ${largeFile}`);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(0);
