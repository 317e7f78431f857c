/**
 * Subscriptions (2026-07-28's subscriptions/listen): a long-lived request whose notifications are the
 * changes the client opted in to. The server first acknowledges the subset of the filter it honours:
 * `toolsListChanged`, and `resourceSubscriptions` for the fixed resources among those asked for (its
 * lists of prompts and resources never change while it runs). Then, each time the tools this caller
 * sees change, it sends `notifications/tools/list_changed` and `notifications/resources/updated` for
 * each subscribed resource that follows the tools (the catalog). Every one of them carries the listen
 * request's id as the subscription id. The subscription ends when the client closes the stream (HTTP)
 * or cancels the request (stdio), which gets no answer, or when the server stops or the stream's
 * lifetime is over, which answer it with an empty result (the client listens again). Streams are
 * capped per caller and overall: each holds a connection and a listener for as long as it lasts.
 */
import { INVALID_PARAMS, ProtocolError } from '../../lib/errors.js';
import { watchVisibleTools } from '../../registry/live.js';
import { followingTools, servedContent } from '../content-context.js';
import type { Feature, HandlerContext } from '../feature.js';
import { INVALID_REQUEST, isObject } from '../json-rpc.js';
import { EdgeError, META, missingExtension } from '../revisions.js';
import { TASKS_EXTENSION } from './tasks.js';

const FLAGS = ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const;
/** JSON-RPC's implementation-defined server error, for a stream refused by the caps. */
const SUBSCRIPTIONS_FULL = -32000;

export const subscriptionsFeature: Feature = {
  capabilities: {},
  methods: {
    'subscriptions/listen': { eras: ['modern'], handle: (params, ctx) => listen(params, ctx) },
  },
};

async function listen(params: Record<string, unknown>, ctx: HandlerContext): Promise<Record<string, unknown>> {
  const { deps, caller, requestId, notify } = ctx;
  const filter = params.notifications;
  if (!isObject(filter)) throw invalid('notifications must be an object');
  for (const flag of FLAGS) {
    if (filter[flag] !== undefined && typeof filter[flag] !== 'boolean')
      throw invalid(`notifications.${flag} must be a boolean`);
  }
  // Task status notifications are the tasks extension's, which a client must declare to ask for; this
  // server sends none (tasks/get is how a task is followed), so taskIds are never acknowledged.
  const taskIds = filter.taskIds;
  if (taskIds !== undefined) {
    if (!ctx.clientExtensions.has(TASKS_EXTENSION)) throw missingExtension(TASKS_EXTENSION, 'notifications.taskIds');
    if (!(Array.isArray(taskIds) && taskIds.every((id) => typeof id === 'string'))) {
      throw invalid('notifications.taskIds must be a list of task ids');
    }
  }
  const uris = filter.resourceSubscriptions;
  if (uris !== undefined && !(Array.isArray(uris) && uris.every((uri) => typeof uri === 'string'))) {
    throw invalid('notifications.resourceSubscriptions must be a list of URIs');
  }
  if (notify === undefined) {
    throw new EdgeError(
      INVALID_REQUEST,
      'Not Acceptable: subscriptions/listen answers with a stream; accept text/event-stream',
      406,
    );
  }

  const place = deps.subscriptions.open(caller.id);
  if (!place.ok) {
    throw new EdgeError(
      SUBSCRIPTIONS_FULL,
      `Too many subscriptions: ${place.reason}; close one (or wait for one to end) before listening again`,
      429,
    );
  }
  const meta = { [META.subscriptionId]: requestId };
  try {
    return await serve(ctx, notify, filter, meta, uris as string[] | undefined);
  } finally {
    place.release();
  }
}

/** The stream, once it has its place: acknowledged, then told of changes until it ends. */
async function serve(
  { deps, caller, signal, closing }: HandlerContext,
  notify: NonNullable<HandlerContext['notify']>,
  filter: Record<string, unknown>,
  meta: Record<string, unknown>,
  uris: string[] | undefined,
): Promise<Record<string, unknown>> {
  const tools = filter.toolsListChanged === true;
  const known = new Set(servedContent(deps).resources.map((r) => r.uri));
  const resources = [...new Set(uris ?? [])].filter((uri) => known.has(uri));
  const updated = followingTools(deps, resources);
  notify({
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: {
      _meta: meta,
      notifications: {
        ...(tools ? { toolsListChanged: true } : {}),
        ...(resources.length > 0 ? { resourceSubscriptions: resources } : {}),
      },
    },
  });
  const stop =
    tools || updated.length > 0
      ? watchVisibleTools(deps.registry, caller, () => {
          if (tools) notify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: meta } });
          for (const uri of updated) {
            notify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { _meta: meta, uri } });
          }
        })
      : () => undefined;
  // A stream lasts at most its lifetime: it then ends as when the server stops, and the client listens again.
  const lifetime = AbortSignal.timeout(deps.subscriptions.maxLifetimeMs);
  try {
    await ended(signal, closing, lifetime);
  } finally {
    stop();
  }
  // The graceful end, when the server stops or the lifetime is over; a client that went away gets
  // nothing (the transport drops it).
  return { _meta: meta };
}

const invalid = (message: string): ProtocolError => new ProtocolError(INVALID_PARAMS, `Invalid params: ${message}`);

/** Resolves when any of the signals is aborted. */
function ended(...signals: (AbortSignal | undefined)[]): Promise<void> {
  return new Promise((resolve) => {
    const given = signals.filter((s): s is AbortSignal => s !== undefined);
    const done = (): void => {
      for (const s of given) s.removeEventListener('abort', done);
      resolve();
    };
    if (given.some((s) => s.aborted)) return resolve();
    for (const s of given) s.addEventListener('abort', done, { once: true });
  });
}
