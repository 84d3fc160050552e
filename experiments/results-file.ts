import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The folder every experiment writes to. Files there are generated, never edited by hand. */
export const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

/** A generated file: its name under results/ and its full text. */
export interface ResultFile {
  name: string;
  text: string;
}

/** Write the files, or with `check` compare them and return the names that differ. */
export function writeOrCheck(files: readonly ResultFile[], check: boolean): string[] {
  const drifted: string[] = [];
  for (const file of files) {
    const path = RESULTS_DIR + file.name;
    if (check) {
      let current = '';
      try {
        current = readFileSync(path, 'utf8');
      } catch {
        // A missing file counts as drift.
      }
      if (current !== file.text) drifted.push(file.name);
    } else {
      writeFileSync(path, file.text);
    }
  }
  return drifted;
}

/** A markdown table from a header row and body rows. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
