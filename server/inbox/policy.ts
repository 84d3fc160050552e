import type { Json, JsonObject } from '../../shared/json.ts';
import { evaluateRules, pickRoute } from '../config/rules.ts';
import type { InterlockConfig, RouteConfig } from '../config/schema.ts';
import { approvalsRequiredFor } from './approvals.ts';
import type { InboxPolicy, InboxRequest, Route } from './core.ts';

function asRoute(route: RouteConfig): Route {
  return { name: route.name, chain: route.chain, slaMs: route.slaMs };
}

/** The route an item takes, with the approvers its amount needs on it (in the payment's currency). */
function routedItem(route: RouteConfig, request: InboxRequest, facts: JsonObject): Route {
  const currency = typeof facts.currency === 'string' ? facts.currency : null;
  return { ...asRoute(route), approvalsRequired: approvalsRequiredFor(route.twoApproversFrom ?? null, request.amount, currency) };
}

function ruleRequest(request: InboxRequest) {
  const flags = Array.isArray(request.flags) ? request.flags.filter((flag): flag is string => typeof flag === 'string') : [];
  return { amount: request.amount, flags };
}

/** The inbox's rules and routes, read from the declarative config. */
export function policyFromConfig(config: Pick<InterlockConfig, 'rules' | 'routes'>): InboxPolicy {
  return livePolicy(() => config);
}

/** The inbox's rules and routes, read from the config in force at each call, so a reload takes effect at the next decision. */
export function livePolicy(current: () => Pick<InterlockConfig, 'rules' | 'routes'>): InboxPolicy {
  return {
    get ruleNames() {
      return current().rules.map((r) => r.name);
    },
    evaluate: (request: InboxRequest, facts: JsonObject) => evaluateRules(current().rules, ruleRequest(request), facts),
    route: (item: { request: InboxRequest; facts: JsonObject; reason: string; detail: Json }) =>
      routedItem(
        pickRoute(current().routes, {
          request: ruleRequest(item.request),
          facts: item.facts,
          reason: item.reason,
          failed: Array.isArray(item.detail) ? item.detail.map(String) : [],
        }),
        item.request,
        item.facts,
      ),
    routeByName: (name: string) => {
      const route = current().routes.find((r) => r.name === name);
      return route ? asRoute(route) : undefined;
    },
  };
}
