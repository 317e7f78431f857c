/**
 * Resources. querygate offers none yet (reports will be the first); the methods answer so that a
 * client can list them and gets a clear error for a URI that does not exist.
 */
import { INVALID_PARAMS, ProtocolError } from '../../errors.js';
import type { Feature } from '../dispatcher.js';

const LIST_TTL_MS = 300_000;

export const resourcesFeature: Feature = {
  capabilities: { resources: { listChanged: false } },
  methods: {
    'resources/list': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: LIST_TTL_MS, cacheScope: 'private' },
      handle: () => ({ resources: [] }),
    },
    'resources/templates/list': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: LIST_TTL_MS, cacheScope: 'private' },
      handle: () => ({ resourceTemplates: [] }),
    },
    'resources/read': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: 0, cacheScope: 'private' },
      nameParam: 'uri',
      handle: (params) => {
        if (typeof params.uri !== 'string')
          throw new ProtocolError(INVALID_PARAMS, 'Invalid params: uri must be a string');
        throw new ProtocolError(INVALID_PARAMS, `Resource not found: ${JSON.stringify(params.uri.slice(0, 200))}`, {
          uri: params.uri,
        });
      },
    },
  },
};
