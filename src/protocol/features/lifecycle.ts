/**
 * How a client learns what this server is: `initialize` for the legacy revisions (their handshake,
 * answered statelessly: nothing is kept from it but what the transport keeps), `ping`, and
 * 2026-07-28's `server/discover`.
 */
import type { Feature } from '../feature.js';
import { LEGACY_VERSIONS, SUPPORTED_VERSIONS } from '../revisions.js';

/** The server's description changes only with a restart; five minutes is a fair guess at how often. */
const DESCRIPTION_TTL_MS = 300_000;

export const lifecycleFeature: Feature = {
  capabilities: {},
  methods: {
    initialize: {
      eras: ['legacy'],
      handle: (params, { server, session }) => {
        const requested = params.protocolVersion;
        const protocolVersion =
          typeof requested === 'string' && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[0];
        session.initialized = true;
        return {
          protocolVersion,
          capabilities: server.handshakeCapabilities,
          serverInfo: server.info,
          instructions: server.instructions,
        };
      },
    },
    ping: { eras: ['legacy'], handle: () => ({}) },
    'server/discover': {
      eras: ['modern'],
      // The same for every caller: no tool list in it, only what the server can do.
      cache: { ttlMs: DESCRIPTION_TTL_MS, cacheScope: 'public' },
      handle: (_params, { server }) => ({
        supportedVersions: [...SUPPORTED_VERSIONS],
        capabilities: server.capabilities,
        instructions: server.instructions,
      }),
    },
  },
};
