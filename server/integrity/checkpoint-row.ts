import type { StoredCheckpoint } from '../../db/port/checkpoints.ts';
import type { SigningKey } from '../receipts/keys.ts';
import { type Checkpoint, otherKeyAdvice, readCheckpoint, unverifiedCheckpoint } from './checkpoint.ts';
import { parseOrigin } from './epoch.ts';

// A stored checkpoint row held against its note: what start-up, the background pass, the offline
// check and a start at the newest checkpoint (server/views/start-position.ts) all ask first.

/**
 * What is wrong with a stored checkpoint row: its note does not verify with `key`, or its columns
 * are not what the note signed; null when it holds. With no key (an offline check given none),
 * the note's body is read unverified and only the columns are held against it.
 */
export function storedRowProblem(row: StoredCheckpoint, key: Pick<SigningKey, 'keyId' | 'publicKeyPem'> | null): string | null {
  let checkpoint: Checkpoint;
  if (key === null) {
    const body = unverifiedCheckpoint(row.note);
    if (body === null) return 'is not a checkpoint note';
    checkpoint = body;
  } else {
    const read = readCheckpoint(row.note, key);
    if (!read.ok) return `does not verify with the receipt key (${read.code}: ${read.message})${otherKeyAdvice(read)}`;
    checkpoint = read.checkpoint;
  }
  const { size, head, origin } = checkpoint;
  const epoch = parseOrigin(origin)?.epoch ?? null;
  if (row.size !== size || row.head !== head || row.epoch !== epoch) {
    return `says size ${row.size}, head ${row.head}, epoch ${row.epoch}, but its note signed ${size}, ${head}, epoch ${epoch ?? origin}: the row was written without the journal`;
  }
  return null;
}
