/**
 * A registry that can be swapped while serving: every method goes to the registry in force, and
 * listeners hear of each swap, so that transports can tell their clients the tool list changed. A
 * call already running finishes on the registry it started on.
 */
import type { Caller } from '../lib/caller.js';
import type { Registry } from './interface.js';

export interface LiveRegistry extends Registry {
  /** Puts `next` in force for every later list and call, then tells the listeners. */
  replace(next: Registry): void;
  /** Calls `listener` after each replace; returns the function that stops it. */
  onToolsChanged(listener: () => void): () => void;
}

export function createLiveRegistry(initial: Registry): LiveRegistry {
  let current = initial;
  const listeners = new Set<() => void>();
  return {
    get tools() {
      return current.tools;
    },
    get argumentSchemas() {
      return current.argumentSchemas;
    },
    get answerSchemas() {
      return current.answerSchemas;
    },
    get dataScopeDimensions() {
      return current.dataScopeDimensions;
    },
    toolsFor: (caller, listing) => current.toolsFor(caller, listing),
    call: (name, args, deps, options) => current.call(name, args, deps, options),
    runsAsJob: (name) => current.runsAsJob(name),
    mayRunAsJob: (caller, name) => current.mayRunAsJob(caller, name),
    submit: (name, args, deps, options) => current.submit(name, args, deps, options),
    replace: (next) => {
      current = next;
      for (const listener of [...listeners]) listener();
    },
    onToolsChanged: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * Calls `listener` each time the tools one caller sees change (a tool added, removed or redescribed),
 * if the registry can change at all; returns the function that stops it.
 */
export function watchVisibleTools(registry: Registry, caller: Caller, listener: () => void): () => void {
  const live = registry as Partial<LiveRegistry>;
  if (typeof live.onToolsChanged !== 'function') return () => undefined;
  let seen = JSON.stringify(registry.toolsFor(caller));
  return live.onToolsChanged(() => {
    const now = JSON.stringify(registry.toolsFor(caller));
    if (now === seen) return;
    seen = now;
    listener();
  });
}
