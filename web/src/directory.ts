import { useEffect, useSyncExternalStore } from 'react';
import type { Role } from '../../shared/api.ts';
import { callApi } from './api-client.ts';

// The people the inbox names, and the quick reasons a rejection can start from, from
// `GET /api/directory` (the config's people and `reject_reasons`). Read once per log-in; when the
// route is missing or fails, people are named by their login name and there are no quick
// reasons: nothing else on the page depends on it.

/** One person as the directory lists them. */
export interface DirectoryPerson {
  name: string;
  display_name: string;
  role: Role;
}

/** `GET /api/directory`. */
export interface Directory {
  people: DirectoryPerson[];
  reject_reasons: string[];
}

const EMPTY: Directory = { people: [], reject_reasons: [] };

let directory: Directory = EMPTY;
let names = new Map<string, string>();
let loading: Promise<void> | null = null;
const listeners = new Set<() => void>();

function isDirectory(value: unknown): value is Directory {
  if (typeof value !== 'object' || value === null) return false;
  const { people, reject_reasons: reasons } = value as Partial<Directory>;
  return Array.isArray(people) && Array.isArray(reasons);
}

/** Read the directory for this log-in (once; `reset` on log-out reads it again next time). */
function load(): Promise<void> {
  loading ??= callApi<unknown>('GET', '/api/directory')
    .then((answer) => {
      if (!isDirectory(answer)) return;
      directory = {
        people: answer.people.filter((p) => typeof p?.name === 'string' && typeof p.display_name === 'string'),
        reject_reasons: answer.reject_reasons.filter((r): r is string => typeof r === 'string' && r.trim() !== ''),
      };
      names = new Map(directory.people.map((p) => [p.name, p.display_name]));
      for (const listener of listeners) listener();
    })
    .catch(() => {
      // Not there yet (404) or not readable: login names and no quick reasons.
    });
  return loading;
}

/** Forget the directory (another person may log in next). */
export function resetDirectory(): void {
  directory = EMPTY;
  names = new Map();
  loading = null;
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** A person's display name, or their login name when the directory does not know them. */
export function displayNameOf(name: string): string {
  return names.get(name) ?? name;
}

/** The directory, re-rendering once it arrives. */
export function useDirectory(): Directory & { displayName: (name: string) => string } {
  const current = useSyncExternalStore(subscribe, () => directory);
  useEffect(() => {
    void load();
  }, []);
  return { ...current, displayName: displayNameOf };
}
