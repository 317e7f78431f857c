/** Prompts. querygate offers none yet; the methods answer so that a client can list them. */
import { INVALID_PARAMS, ProtocolError } from '../../errors.js';
import type { Feature } from '../dispatcher.js';

export const promptsFeature: Feature = {
  capabilities: { prompts: { listChanged: false } },
  methods: {
    'prompts/list': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: 300_000, cacheScope: 'private' },
      handle: () => ({ prompts: [] }),
    },
    'prompts/get': {
      eras: ['legacy', 'modern'],
      nameParam: 'name',
      handle: (params) => {
        if (typeof params.name !== 'string')
          throw new ProtocolError(INVALID_PARAMS, 'Invalid params: name must be a string');
        throw new ProtocolError(INVALID_PARAMS, `Unknown prompt: ${JSON.stringify(params.name.slice(0, 100))}`);
      },
    },
  },
};
