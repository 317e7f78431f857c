/**
 * Log messages to the client (notifications/message): how each tool call ended, never its rows or
 * anything personal. A 2026-07-28 request asks for them in its `_meta`; a legacy client asks once
 * with `logging/setLevel`, which lasts for its connection (a stdio session; an HTTP request, being
 * stateless, has no connection to remember it for).
 */
import { INVALID_PARAMS, ProtocolError } from '../../lib/errors.js';
import type { ClientLogLevel } from '../../registry/interface.js';
import type { Feature } from '../feature.js';
import { LOG_LEVELS } from '../revisions.js';

export const loggingFeature: Feature = {
  capabilities: { logging: {} },
  methods: {
    'logging/setLevel': {
      eras: ['legacy'],
      handle: (params, { session }) => {
        if (!LOG_LEVELS.includes(params.level as ClientLogLevel)) {
          throw new ProtocolError(INVALID_PARAMS, `Invalid params: level must be one of ${LOG_LEVELS.join(', ')}`);
        }
        session.logLevel = params.level as ClientLogLevel;
        return {};
      },
    },
  },
};
