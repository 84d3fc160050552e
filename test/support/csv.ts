/**
 * RFC 4180 read back by hand (quoted fields, doubled quotes, CRLF records), independent of the
 * code that writes it: the header and each record as its fields.
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      i += 1;
      for (;;) {
        const quote = text.indexOf('"', i);
        if (quote < 0) throw new Error('an unclosed quoted field');
        field += text.slice(i, quote);
        i = quote + 1;
        if (text[i] === '"') {
          field += '"';
          i += 1;
        } else break;
      }
    } else if (text.startsWith('\r\n', i)) {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i += 2;
    } else if (text[i] === ',') {
      record.push(field);
      field = '';
      i += 1;
    } else if (text[i] === '\n' || text[i] === '\r') {
      throw new Error(`a bare line break at ${i}: records end with CRLF`);
    } else {
      field += text[i];
      i += 1;
    }
  }
  if (field !== '' || record.length > 0) throw new Error('the last record does not end with CRLF');
  return records;
}
