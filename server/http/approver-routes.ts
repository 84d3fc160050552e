import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DecisionAnswer, DecisionBody } from '../../shared/api.ts';
import { assertNever, type Status } from '../../shared/statuses.ts';
import { currentStatus } from '../refunds/answers.ts';
import { signReceipt } from '../receipts/receipts.ts';
import { displayNameOf, type Services } from '../app/services.ts';
import { type Ask, allowsOn, groupsWithin } from '../access/rules.ts';
import { askOf, personOf } from './access-guard.ts';
import { isJournalFailure } from '../views/failures.ts';
import { lastDecision } from '../journal/chain.ts';
import { limits } from '../../shared/limits.ts';
import { AppError } from './errors.ts';
import { itemDetail } from './item-detail.ts';
import { DECISION_MESSAGES, DECISION_REFUSALS, decisionMessage } from './decision-messages.ts';
import type { ErrorCode } from '../../shared/api.ts';
import {
  DecisionBodySchema,
  EffectParams,
  HistoryItemSchema,
  HistoryQuery,
  InboxItemSchema,
  ItemDetailSchema,
  ReceiptSchema,
  responses,
} from '../../shared/schemas.ts';

export interface ApproverRouteOptions {
  services: Services;
}

/** Carry out one decision through the inbox. */
async function decide(services: Services, effectId: string, by: string, body: DecisionBody): Promise<Status> {
  const seen = { seen: body.escalation };
  switch (body.action) {
    case 'approve':
      return services.inbox.approve(effectId, by, seen);
    case 'reject':
    case 'close':
      return services.inbox.reject(effectId, by, { ...seen, reason: body.reason ?? null });
    case 'repair':
      return services.inbox.repair(effectId, by, body.repair_index ?? -1, seen);
    default:
      return assertNever(body.action);
  }
}

/**
 * The approvers' API behind the React inbox, registered behind a session (session-routes.ts) and
 * inside the journal's scope (journal-scope.ts): the inbox, history, items, their receipts and
 * decisions. Who may see and decide is asked of the access rules (server/access/rules.ts), with the
 * config's groups as they are now, and checked again by the gate when anything is sent. Every
 * chain shown or signed is read through the views.
 */
export async function approverRoutes(scope: FastifyInstance, opts: ApproverRouteOptions): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services } = opts;
  const approvers = { tags: ['approvers'], security: [{ session: [] }] };
  /** What every call behind a session can be answered besides its own refusals. */
  const sessionErrors: ErrorCode[] = ['unauthorized', 'session_expired', 'internal_error', 'journal_unavailable'];
  const changeErrors: ErrorCode[] = [...sessionErrors, 'csrf_failed', 'validation_failed', 'payload_too_large', 'unsupported_media_type'];
  // A path that cannot be read (a malformed %-escape) is 400 before the route; a well-read effect id that is not one is 404.
  const itemErrors: ErrorCode[] = [...sessionErrors, 'forbidden', 'not_found', 'validation_failed'];

  const itemList: Ask = { resource: 'item', verb: 'list' };
  const decisionMake: Ask = { resource: 'decision', verb: 'make' };
  /** The groups whose open items and history this person's lists cover. */
  const listed = (request: FastifyRequest) => groupsWithin(personOf(request), services.config.groups, itemList);
  /** Whether this person may see another request on the same payment, routed to these groups. */
  const readsPanel = (request: FastifyRequest) => (groups: ReadonlySet<string>) =>
    allowsOn(personOf(request), services.config.groups, { resource: 'payment_panel', verb: 'read' }, groups);
  /** Whether this person may decide an escalation of this group: never for finance, who reads every group. */
  const decidesFor = (request: FastifyRequest) => (group: string) => allowsOn(personOf(request), services.config.groups, decisionMake, [group]);

  const inboxSchema = {
    ...approvers,
    operationId: 'listInbox',
    summary: 'open escalations routed to my groups (every group, read only, for finance), breached and longest overdue first',
    response: responses({ 200: Type.Object({ items: Type.Array(InboxItemSchema), now_ms: Type.Integer() }) }, [...sessionErrors, 'forbidden']),
  };
  app.get('/api/inbox', { schema: inboxSchema, config: { access: itemList } }, async (request) => {
    const groups = listed(request);
    const { inbox } = await services.views.current();
    // Each item as the live feed shows it: its payment's current facts, read apart from the views
    // (display only), and only the approvals that still count now.
    const items = inbox.queue(groups).map((item) => services.views.shown(item));
    return { items, now_ms: services.clock.nowMs() };
  });

  const historySchema = (summary: string) => ({
    ...approvers,
    summary,
    querystring: HistoryQuery,
    response: responses({ 200: Type.Object({ items: Type.Array(HistoryItemSchema) }) }, [...sessionErrors, 'forbidden', 'validation_failed']),
  });
  const history = (kind: 'done' | 'closed') => async (request: FastifyRequest<{ Querystring: { q?: string } }>) => {
    const groups = listed(request);
    const { inbox } = await services.views.current();
    return { items: await inbox.history(kind, groups, request.query.q ?? '') };
  };
  app.get('/api/done', { schema: { ...historySchema('finished items, searchable by request id or payment intent'), operationId: 'listDone' }, config: { access: itemList } }, history('done'));
  app.get('/api/closed', { schema: { ...historySchema('closed items, searchable by request id or payment intent'), operationId: 'listClosed' }, config: { access: itemList } }, history('closed'));

  /**
   * An item the route's question allows this person on: one ever routed to a group they may read
   * (or decide for). Anything else does not exist for them.
   */
  async function visibleChain(request: FastifyRequest<{ Params: { effect_id: string } }>) {
    const effectId = request.params.effect_id;
    const views = await services.views.current();
    const summary = await views.inbox.summary(effectId);
    if (!summary || !views.inbox.owned(summary) || !allowsOn(personOf(request), services.config.groups, askOf(request), summary.groups)) {
      throw new AppError('not_found', 'no such item in your groups');
    }
    return { effectId, views, chain: await views.chain(effectId) };
  }

  const itemSchema = { ...approvers, operationId: 'getItem', params: EffectParams, summary: 'the request, facts then and now, changes, repairs, journal history, receipt verification', response: responses({ 200: ItemDetailSchema }, itemErrors) };
  app.get('/api/items/:effect_id', { schema: itemSchema, config: { access: { resource: 'item', verb: 'read' } } }, async (request) => {
    const { effectId, views, chain } = await visibleChain(request);
    return itemDetail(services, views, effectId, chain, decidesFor(request), readsPanel(request), request.person!.name);
  });

  const itemReceiptSchema = { ...approvers, operationId: 'getItemReceipt', params: EffectParams, summary: 'the signed receipt, to verify offline', response: responses({ 200: ReceiptSchema }, itemErrors) };
  app.get('/api/items/:effect_id/receipt', { schema: itemReceiptSchema, config: { access: { resource: 'receipt', verb: 'read' } } }, async (request, reply) => {
    const { effectId, chain } = await visibleChain(request);
    reply.header('content-disposition', `attachment; filename="interlock-receipt-${effectId}.json"`);
    return signReceipt(effectId, chain, services.signingKey);
  });

  const decisionSchema = {
    ...approvers,
    operationId: 'createDecision',
    summary: 'approve, reject, repair or close the escalation I saw',
    description: '`escalation` is the hash of the escalation seen; a decision on anything else is SUPERSEDED. `repair_index` only with action repair.',
    params: EffectParams,
    body: DecisionBodySchema,
    response: responses(
      {
        200: Type.Object({
          status: Type.String(),
          message: Type.String(),
          decided: Type.Union([Type.Object({}, { additionalProperties: true, description: 'the decision that came first: action, by, display_name, at_ms, reason' }), Type.Null()]),
          item: ItemDetailSchema,
        }),
      },
      [...itemErrors, ...changeErrors, 'self_approval', 'same_approver'],
    ),
  };
  // Finance reads every item and decides none: refused before anything is looked up (access-guard.ts).
  app.post('/api/items/:effect_id/decisions', { schema: decisionSchema, config: { access: decisionMake } }, async (request): Promise<DecisionAnswer> => {
    const { effectId } = await visibleChain(request);
    const { body } = request;
    // The one rule a field's schema cannot say alone: a repair names which, and only a repair does.
    if (body.action === 'repair' && body.repair_index === undefined) throw new AppError('validation_failed', 'repair_index: which repair to accept, from 0');
    if (body.action !== 'repair' && body.repair_index !== undefined) throw new AppError('validation_failed', 'repair_index: only for action repair');
    // A rejection says why, in the person's words (the agent is told); nothing else takes one.
    const rejecting = body.action === 'reject' || body.action === 'close';
    const reason = body.reason?.trim() ?? '';
    // Counted in characters, as the page counts them: one beyond the basic plane is one, not two.
    const reasonChars = [...reason].length;
    if (rejecting && (reasonChars === 0 || reasonChars > limits.rejectReasonCharsMax)) {
      throw new AppError('validation_failed', `reason: say why, 1 to ${limits.rejectReasonCharsMax} characters`);
    }
    if (!rejecting && body.reason !== undefined) throw new AppError('validation_failed', 'reason: only for action reject or close');
    const by = personOf(request).name;
    let answered: Status | null = null;
    try {
      answered = await decide(services, effectId, by, body);
    } catch (error) {
      // A journal that failed a check is never taken for an unreachable Stripe.
      if (isJournalFailure(error)) throw error;
      request.log.warn({ err: error, effectId }, 'decision recorded, send not finished');
    }
    const views = await services.views.current();
    const chain = await views.chain(effectId);
    // Stripe could not be read or reached after the decision was recorded: the journal says what
    // stands (APPROVED is sent by the next background pass, IN_FLIGHT is settled by recovery).
    const unreachable = answered === null;
    const status = answered ?? currentStatus(chain);
    // Nothing was recorded: the approver benefits from the refund, or approved it already.
    if (status === 'REFUSED:beneficiary') throw new AppError('self_approval', DECISION_REFUSALS.beneficiary);
    if (status === 'REFUSED:same_approver') throw new AppError('same_approver', DECISION_REFUSALS.same_approver);
    // Someone else's decision came first: say who, what and when, so nobody decides blind. A first
    // approval of two decided nothing, so it is never named as the decision that came first.
    const first = status === 'ALREADY_DECIDED' || status === 'SUPERSEDED' ? lastDecision(chain) : undefined;
    const decided = first ? { action: first.decision, by: first.by, display_name: displayNameOf(services.config, first.by), at_ms: first.at_ms, reason: first.reason ?? null } : null;
    const known = decisionMessage(status) ?? `The refund was not sent: ${status}.`;
    const message = unreachable
      ? status === 'APPROVED'
        ? DECISION_MESSAGES.APPROVED
        : `Stripe could not be reached, so nothing was sent; the item stands as ${status}. Try again in a moment.`
      : known;
    return { status, message, decided, item: await itemDetail(services, views, effectId, chain, decidesFor(request), readsPanel(request), by) };
  });
}
