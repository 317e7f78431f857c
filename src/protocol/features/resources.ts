/**
 * Resources: the server's documentation (querygate://catalog, querygate://metrics, querygate://schema)
 * and the resource templates the packs declare, whose variables are read from the URI. A URI that
 * names none is "Resource not found", with the code of the request's revision (revisions.ts).
 */
import { offers, resourceAt } from '../../content/index.js';
import { ArgumentError, INVALID_PARAMS, ProtocolError, ResourceNotFoundError } from '../../lib/errors.js';
import { contentFor, servedContent } from '../content-context.js';
import type { Feature, HandlerContext } from '../feature.js';

/** The lists change only with a restart: the packs' resources and templates are fixed at start-up. */
const LIST_TTL_MS = 300_000;
/**
 * The catalog follows the caller's tools, which a configuration reload may change: as long as
 * tools/list may be kept, and only by this caller (toolsets). The other texts change only with a
 * restart, but one hint serves every resource.
 */
const READ_TTL_MS = 60_000;

export const resourcesFeature: Feature = {
  // The list is fixed at start-up. What a reload changes is the catalog's text: a client that
  // subscribes to it is told (resources/subscribe before 2026-07-28, subscriptions/listen since).
  capabilities: { resources: { subscribe: true, listChanged: false } },
  methods: {
    'resources/list': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: LIST_TTL_MS, cacheScope: 'private' },
      handle: (_params, ctx) => ({
        resources: servedContent(ctx.deps).resources.map(({ uri, name, title, description, mimeType }) => ({
          uri,
          name,
          title,
          description,
          mimeType,
        })),
      }),
    },
    'resources/templates/list': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: LIST_TTL_MS, cacheScope: 'private' },
      // Only the templates the caller may read: those whose tools it may call.
      handle: (_params, ctx) => ({
        resourceTemplates: servedContent(ctx.deps)
          .resourceTemplates.filter((served) => offers(served, ctx.deps.registry.toolsFor(ctx.caller)))
          .map(({ template }) => ({
            uriTemplate: template.uriTemplate,
            name: template.name,
            title: template.title,
            description: template.description,
            mimeType: template.mimeType,
          })),
      }),
    },
    'resources/subscribe': {
      eras: ['legacy'],
      handle: (params, ctx) => {
        const uri = subscribable(params, ctx);
        (ctx.session.resourceSubscriptions ??= new Set()).add(uri);
        return {};
      },
    },
    'resources/unsubscribe': {
      eras: ['legacy'],
      handle: (params, ctx) => {
        ctx.session.resourceSubscriptions?.delete(subscribable(params, ctx));
        return {};
      },
    },
    'resources/read': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: READ_TTL_MS, cacheScope: 'private' },
      nameParam: 'uri',
      handle: async (params, ctx) => {
        const { uri } = params;
        if (typeof uri !== 'string') throw new ProtocolError(INVALID_PARAMS, 'Invalid params: uri must be a string');
        const { content, context } = contentFor(ctx);
        const found = resourceAt(content, uri);
        // A template the caller is not offered names nothing to it, exactly as a URI of no template.
        if (!found || ('template' in found && !offers(found.template, context.tools))) {
          throw new ResourceNotFoundError(uri);
        }
        if ('resource' in found) {
          return { contents: [{ uri, mimeType: found.resource.mimeType, text: found.resource.read(context) }] };
        }
        try {
          const text = await found.template.template.read(found.variables, context);
          return { contents: [{ uri, mimeType: found.template.template.mimeType, text }] };
        } catch (err) {
          if (!(err instanceof ArgumentError)) throw err;
          throw new ProtocolError(INVALID_PARAMS, `Invalid params: ${uri.slice(0, 200)}: ${err.message}`, {
            uri,
            issues: err.issues,
          });
        }
      },
    },
  },
};

/**
 * The URI of a resource one may subscribe to: any of the fixed ones (those that follow the tools are
 * updated on a reload; the others never change while the server runs). A template's resources are not.
 */
function subscribable(params: Record<string, unknown>, ctx: HandlerContext): string {
  const { uri } = params;
  if (typeof uri !== 'string') throw new ProtocolError(INVALID_PARAMS, 'Invalid params: uri must be a string');
  if (!servedContent(ctx.deps).resources.some((r) => r.uri === uri)) throw new ResourceNotFoundError(uri);
  return uri;
}
