import { openStorage } from '../../db/sqlite-storage.ts';
import { budgetFromConfig } from '../../server/app/services.ts';

// A process whose only work is one call waiting for its place in a budget shared through the
// journal's database, as a command's first Stripe call waits (nothing else open: no socket, no
// server). Prints "granted" once the place is given, then stops the budget and ends.

const file = process.argv[2];
if (file === undefined) throw new Error('name the database file');
const storage = await openStorage({ file });
const budget = budgetFromConfig({ stripe: { mode: 'sandbox', rateLimits: { share: 0.8, globalPerSecond: null, endpointPerSecond: null } } }, { slots: storage.budgetSlots, account: 'sandbox' });
budget.start();
const grant = await budget.take('recovery', ['GET /v1/refunds']);
grant.release();
process.stdout.write('granted\n');
await budget.stop();
await storage.close();
