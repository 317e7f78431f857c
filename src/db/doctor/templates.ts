import type { Pack } from '../../pack.js';
import { ConfigError } from '../../lib/errors.js';
import { createRegistry } from '../../registry/index.js';
import type { SafetyCheck } from './check.js';

/**
 * The registry's start-up checks of every served template (treatments, selections, bound values,
 * examples), so that doctor fails a template `serve` would refuse, with the same message.
 */
export function templatesCheck(packs: readonly Pack[]): SafetyCheck {
  const name = "every template passes the registry's checks";
  try {
    createRegistry(packs.flatMap((pack) => pack.templates));
    return { name, ok: true };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return {
      name,
      ok: false,
      detail: err.message,
      fix: 'change the template as the message says; serve refuses it until then',
    };
  }
}
