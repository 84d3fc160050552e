import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';
import { toolCommand } from '../tools.ts';
import type { ChainFigures } from './chain-figures.ts';
import type { Scoreboard } from './figures.ts';
import { emptyMoney, MONEY_FIELDS, type MoneyFigures } from './money.ts';

// The scoreboard's figures as its derived tables hold them (JSON bodies) and read back, each field
// checked: a body that is not what the scoreboard wrote is a damaged table, and fails.

/** A body that is not what the scoreboard wrote: the tables must be rebuilt. */
export function damagedTable(what: string): Error {
  return new Error(`the derived scoreboard ${what}; stop the server and rebuild the views' tables from the journal: ${toolCommand('rebuild-views', '--db <file>')}`);
}

/** Reads the fields of one stored object, naming the first that is wrong. */
class Fields {
  constructor(
    readonly body: JsonObject,
    readonly where: string,
  ) {}

  #bad(key: string): Error {
    return damagedTable(`${this.where} holds no valid ${key}`);
  }

  number(key: string): number {
    const value = this.body[key];
    if (typeof value !== 'number') throw this.#bad(key);
    return value;
  }

  numberOrNull(key: string): number | null {
    return this.body[key] === null ? null : this.number(key);
  }

  boolean(key: string): boolean {
    const value = this.body[key];
    if (typeof value !== 'boolean') throw this.#bad(key);
    return value;
  }

  string(key: string): string {
    const value = this.body[key];
    if (typeof value !== 'string') throw this.#bad(key);
    return value;
  }

  stringOrNull(key: string): string | null {
    return this.body[key] === null ? null : this.string(key);
  }

  list<T>(key: string, item: (value: Json) => value is T & Json): T[] {
    const value = this.body[key];
    if (!Array.isArray(value) || !value.every(item)) throw this.#bad(key);
    return [...value];
  }

  object(key: string): Fields {
    const value = this.body[key];
    if (!isJsonObject(value)) throw this.#bad(key);
    return new Fields(value, `${this.where} ${key}`);
  }

  counts(key: string): Record<string, number> {
    const counts = this.object(key);
    return Object.fromEntries(Object.keys(counts.body).map((name) => [name, counts.number(name)]));
  }

  money(): MoneyFigures {
    const money = emptyMoney();
    for (const field of MONEY_FIELDS) money[field] = this.number(field);
    return money;
  }
}

const isString = (value: Json): value is string => typeof value === 'string';
const isNumber = (value: Json): value is number => typeof value === 'number';

/** Money by currency as stored, each currency's figures in the order the API gives them. */
function moneyByCurrency(fields: Fields): Record<string, MoneyFigures> {
  return Object.fromEntries(Object.keys(fields.body).map((currency) => [currency, fields.object(currency).money()]));
}

/** A chain's figures as a JSON body. */
export function figuresBody(f: ChainFigures): JsonObject {
  return { ...f, money: { ...f.money }, breachesByGroup: { ...f.breachesByGroup }, breachesMissedByGroup: { ...f.breachesMissedByGroup } };
}

/** A chain's figures read back from its stored body. */
export function storedFigures(body: JsonObject, where: string): ChainFigures {
  const f = new Fields(body, where);
  return {
    requestedAtMs: f.numberOrNull('requestedAtMs'),
    groups: f.list('groups', isString),
    root: f.boolean('root'),
    cleared: f.boolean('cleared'),
    clearedVerified: f.boolean('clearedVerified'),
    sentAfterPerson: f.boolean('sentAfterPerson'),
    committed: f.boolean('committed'),
    rejected: f.number('rejected'),
    closedByRepair: f.number('closedByRepair'),
    repairsAccepted: f.number('repairsAccepted'),
    approvedOnFactsNow: f.number('approvedOnFactsNow'),
    open: f.boolean('open'),
    escalated: f.boolean('escalated'),
    reasons: f.list('reasons', isString),
    reasonGroups: f.list('reasonGroups', isString),
    staleCaught: f.number('staleCaught'),
    crashToPerson: f.number('crashToPerson'),
    repairsSuggested: f.number('repairsSuggested'),
    breachesByGroup: f.counts('breachesByGroup'),
    breachesMissedByGroup: f.counts('breachesMissedByGroup'),
    confirmed: f.boolean('confirmed'),
    waitsMs: f.list('waitsMs', isNumber),
    currency: f.string('currency'),
    money: f.object('money').money(),
  };
}

/** The board's counts as a JSON body: every figure but those figured at each read (the share, the waits' statistics). */
export function countsBody(board: Scoreboard): JsonObject {
  const { no_person_share: _share, time_to_decision: _times, ...counts } = board;
  const money: JsonObject = Object.fromEntries(Object.entries(counts.money).map(([currency, figures]) => [currency, { ...figures }]));
  return { ...counts, escalated_by_reason: { ...counts.escalated_by_reason }, sla_breaches_by_group: { ...counts.sla_breaches_by_group }, sla_breaches_missed_by_group: { ...counts.sla_breaches_missed_by_group }, money };
}

/** The board's counts read back into `board` (every other figure as it stands there), in the board's own order. */
export function storedCounts(body: JsonObject, board: Scoreboard): Scoreboard {
  const f = new Fields(body, 'totals');
  return {
    ...board,
    requests: f.number('requests'),
    cleared_no_person: f.number('cleared_no_person'),
    cleared_verified: f.number('cleared_verified'),
    sent_after_person: f.number('sent_after_person'),
    rejected: f.number('rejected'),
    closed_by_repair: f.number('closed_by_repair'),
    repairs_accepted: f.number('repairs_accepted'),
    open: f.number('open'),
    escalated: f.number('escalated'),
    escalated_by_reason: f.counts('escalated_by_reason'),
    stale_approvals_caught: f.number('stale_approvals_caught'),
    crash_to_person: f.number('crash_to_person'),
    repairs_suggested: f.number('repairs_suggested'),
    sla_breaches: f.number('sla_breaches'),
    sla_breaches_by_group: f.counts('sla_breaches_by_group'),
    confirmed_by_target: f.number('confirmed_by_target'),
    unconfirmed_sent: f.number('unconfirmed_sent'),
    sla_breaches_missed_by_group: f.counts('sla_breaches_missed_by_group'),
    approved_on_facts_now: f.number('approved_on_facts_now'),
    money: moneyByCurrency(f.object('money')),
  };
}

/** One field of a stored body read as a string or null. */
export function storedStringOrNull(body: JsonObject, key: string, where: string): string | null {
  return new Fields(body, where).stringOrNull(key);
}
