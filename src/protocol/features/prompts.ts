/**
 * Prompts: what the packs offer a user to start a piece of work with, such as a weekly review. Their
 * arguments are validated as tool arguments are (src/content/prompts.ts): an unknown prompt, an unknown
 * argument or one that breaks its rule is -32602, naming it.
 */
import { INVALID_PARAMS, ProtocolError } from '../../lib/errors.js';
import { getPrompt } from '../../content/prompts.js';
import { contentFor, servedContent } from '../content-context.js';
import type { Feature } from '../feature.js';
import { isObject } from '../json-rpc.js';

export const promptsFeature: Feature = {
  // The packs' prompts are fixed at start-up.
  capabilities: { prompts: { listChanged: false } },
  methods: {
    'prompts/list': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: 300_000, cacheScope: 'private' },
      handle: (_params, { deps }) => ({ prompts: servedContent(deps).prompts.map((p) => p.listing) }),
    },
    'prompts/get': {
      eras: ['legacy', 'modern'],
      nameParam: 'name',
      handle: (params, ctx) => {
        const { name, arguments: args } = params;
        if (typeof name !== 'string') throw new ProtocolError(INVALID_PARAMS, 'Invalid params: name must be a string');
        if (args !== undefined && !isObject(args)) {
          throw new ProtocolError(INVALID_PARAMS, 'Invalid params: arguments must be an object of strings');
        }
        const { content, context } = contentFor(ctx);
        const prompt = content.prompts.find((p) => p.template.name === name);
        if (!prompt) throw new ProtocolError(INVALID_PARAMS, `Unknown prompt: ${JSON.stringify(name.slice(0, 100))}`);
        return getPrompt(prompt, args, context);
      },
    },
  },
};
