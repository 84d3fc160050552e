import { type RefundRequest, requestPayload } from '../../shared/api.ts';
import type { Status } from '../../shared/statuses.ts';
import type { Services } from '../app/services.ts';
import { DEMO_AGENT, type DemoPlan, type DemoTally, demoRequestBody } from './plan.ts';

/** What demo traffic does in the sandbox: the embedded `Sandbox` (or its remote twin) has all three. */
export interface DemoSandbox {
  createPaymentIntent(amountCents: number): Promise<{ id: string }>;
  /** A refund made by hand in the dashboard, outside Interlock. */
  handRefund(paymentIntent: string, amountCents: number): unknown;
  openDispute(paymentIntent: string): unknown;
}

/** What became of one demo request. */
export interface DemoOutcome {
  paymentIntent: string;
  status: Status;
}

/**
 * Make the plan's payment, dispute it if the plan says so, and ask for the refund the way the
 * agents' route does (agent-routes.ts): the payload normalised by `requestPayload`, bound to the
 * agent `demo` and the request id, handed to `inbox.submit`, the live pages told. So the request
 * is journaled, decided and shown exactly as an agent's is. A stale plan then refunds part of the
 * payment by hand, once the request waits for a person.
 */
export async function askForDemoRefund(services: Services, sandbox: DemoSandbox, requestId: string, plan: DemoPlan): Promise<DemoOutcome> {
  const payment = await sandbox.createPaymentIntent(plan.paymentCents);
  if (plan.dispute) await sandbox.openDispute(payment.id);
  // Caught up first: a row that fails its check, anywhere in the journal, stops the request here.
  await services.views.current();
  const request: RefundRequest = { id: requestId, agent: DEMO_AGENT, ...requestPayload(demoRequestBody(requestId, payment.id, plan)) };
  const status = await services.inbox.submit(request);
  services.views.refresh();
  if (plan.handRefundCents !== null && status === 'QUEUED') await sandbox.handRefund(payment.id, plan.handRefundCents);
  return { paymentIntent: payment.id, status };
}

/** The demo requests this data folder's journal holds, read from the views (caught up first). */
export async function tallyJournaledDemoRequests(services: Services): Promise<DemoTally> {
  const { inbox } = await services.views.current();
  return inbox.demoTally();
}
