import { generateKeyPairSync } from 'node:crypto';
import { type Checkpoint, mayFollow, readCheckpoint, signCheckpoint } from '../../server/integrity/checkpoint.ts';
import { keyIdFor, type SigningKey } from '../../server/receipts/keys.ts';
import type { World } from './world.ts';

// Checkpoints of the global chain, signed as the server signs them while the run writes, crashes
// and restarts: every checkpoint extends the one before it (no smaller, the same chain at the
// earlier one's size), and at the end every one still holds on the journal as it stands.

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const KEY: SigningKey = { keyId: keyIdFor(publicKey), privateKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
const ORIGIN = 'interlock/journal/5151515151515151/epoch/0';

const signed = new WeakMap<World, Checkpoint[]>();

/** The global hash after each size, as the journal holds it now. */
async function globalsBySize(world: World): Promise<string[]> {
  const globals: string[] = [];
  for (let after = 0; ; ) {
    const page = await world.journal.scan(after, 10_000);
    if (page.length === 0) return globals;
    for (const { seq, global } of page) {
      globals.push(global);
      after = seq;
    }
  }
}

function holds(checkpoint: Checkpoint, globals: readonly string[]): boolean {
  return checkpoint.size === 0 || globals[checkpoint.size - 1] === checkpoint.head;
}

/** An actor: sign a checkpoint of the journal's head now, and hold it against the one before. */
export async function signCheckpointNow(world: World): Promise<void> {
  const head = await world.journal.head();
  if (head === null) return;
  const note = signCheckpoint({ origin: ORIGIN, size: head.size, head: head.globalHash }, KEY);
  const read = readCheckpoint(note, KEY);
  if (!read.ok) return world.violation(`a checkpoint signed now reads back: ${read.code} ${read.message}`);
  const list = signed.get(world) ?? [];
  const previous = list.at(-1);
  if (previous !== undefined) {
    world.hit('check.checkpoint_extends');
    const globals = await globalsBySize(world);
    if (!mayFollow(previous, read.checkpoint) || !holds(previous, globals)) {
      world.violation(`every checkpoint extends the one before it: ${previous.size} entries at ${previous.head.slice(0, 12)} then ${read.checkpoint.size} at ${read.checkpoint.head.slice(0, 12)}`);
    }
  }
  list.push(read.checkpoint);
  signed.set(world, list);
}

/** After the run: every checkpoint signed during it still holds on the journal. */
export async function checkCheckpoints(world: World): Promise<void> {
  const list = signed.get(world) ?? [];
  if (list.length === 0) return;
  const globals = await globalsBySize(world);
  for (const checkpoint of list) {
    world.hit('check.checkpoint_holds');
    if (!holds(checkpoint, globals)) world.violation(`a checkpoint signed during the run holds at the end: ${checkpoint.size} entries at ${checkpoint.head.slice(0, 12)}`);
  }
}
