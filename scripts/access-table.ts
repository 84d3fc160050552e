// The "Who may do what" table of the approvers' API page and the HTTP API page, written from the access rules
// (server/access/rules.ts) so the documents cannot drift from them: `npx tsx scripts/access-table.ts`
// rewrites the table between its markers in both files; test/access/docs.test.ts fails when either
// differs from what this prints.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { everyAsk, type Reach, reachOf, type Resource } from '../server/access/rules.ts';
import { ROLES } from '../shared/api.ts';

/** Where the table sits in each document. */
export const TABLE_START = '<!-- access-table: written by scripts/access-table.ts from server/access/rules.ts -->';
export const TABLE_END = '<!-- /access-table -->';
/** The documents that carry the table. */
export const DOCUMENTS = ['docs/reference/approvers-api.md', 'docs/agents/http-api.md'] as const;

/** What each resource is, in the words of the pages and routes. */
const RESOURCE_WORDS: Readonly<Record<Resource, string>> = {
  item: 'items (inbox, Done, Closed, the item page)',
  decision: 'decisions on an item',
  ledger_row: 'ledger rows and totals',
  receipt: 'receipts (of an item or a ledger row)',
  scoreboard_breakdown: 'the scoreboard and its series',
  reconciliation: 'reconciliation runs',
  live_feed: 'the live feed',
  payment_panel: "the payment panel's other requests",
  export: 'CSV downloads (ledger, scoreboard)',
  directory: 'the directory of people',
};

const REACH_WORDS: Readonly<Record<Reach, string>> = {
  every: 'all',
  own_groups: 'own groups',
  none: 'no',
};

/** The table, one line per resource and verb, one column per role. */
export function accessTable(): string {
  const head = `| what | verb | ${ROLES.join(' | ')} |`;
  const rule = `| --- | --- | ${ROLES.map(() => '---').join(' | ')} |`;
  const rows = everyAsk().map((ask) => `| ${RESOURCE_WORDS[ask.resource]} | ${ask.verb} | ${ROLES.map((role) => REACH_WORDS[reachOf(role, ask)]).join(' | ')} |`);
  return [head, rule, ...rows].join('\n');
}

/** The table as a document holds it between its markers, or null when it has none. */
export function tableIn(text: string): string | null {
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start < 0 || end < start) return null;
  return text.slice(start + TABLE_START.length, end).trim();
}

function rewrite(path: string): void {
  const text = readFileSync(path, 'utf8');
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`${path} has no ${TABLE_START} ... ${TABLE_END}`);
  writeFileSync(path, `${text.slice(0, start + TABLE_START.length)}\n${accessTable()}\n${text.slice(end)}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../', import.meta.url));
  for (const document of DOCUMENTS) rewrite(`${root}${document}`);
  console.log(accessTable());
}
