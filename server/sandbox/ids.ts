import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Characters after the prefix, as in Stripe's ids (`re_3MtwBwLkdIwHu7ix0jNpWbYd`). */
const ID_BODY_CHARS = 24;

/** Id prefixes, as Stripe uses them. */
export const ID_PREFIXES = ['pi', 'ch', 're', 'dp', 'evt', 'req', 'pm', 'cus'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/** A fresh random id with Stripe's prefix for the object kind. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomChars(ID_BODY_CHARS)}`;
}

/** Random characters from [0-9A-Za-z]. */
export function randomChars(count: number): string {
  const bytes = randomBytes(count);
  let out = '';
  // 256 is not a multiple of 62, so the first characters are a little likelier; ids only need uniqueness.
  for (const byte of bytes) out += ALPHABET[byte % ALPHABET.length];
  return out;
}
