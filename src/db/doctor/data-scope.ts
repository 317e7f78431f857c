import type { Pack } from '../../pack.js';
import { ConfigError } from '../../lib/errors.js';
import { hiddenByDataScope } from '../../registry/access.js';
import { createRegistry } from '../../registry/index.js';
import type { Registry } from '../../registry/interface.js';
import type { SafetyCheck } from './check.js';

/**
 * What each declared data-scope dimension hides from a caller scoped on it: the tools that do not
 * apply it, and the reports (and their jobs) that run one of them. A warning when it hides any, since
 * nothing tells a scoped caller, or its operator, that they are missing.
 */
export function dataScopeChecks(packs: readonly Pack[]): SafetyCheck[] {
  return packs.flatMap((pack) => {
    if ((pack.dataScope ?? []).length === 0) return [];
    let registry: Registry;
    try {
      registry = createRegistry(pack.templates, { reports: pack.reports ?? [], jobs: true });
    } catch (err) {
      if (err instanceof ConfigError) return []; // templatesCheck fails it with the message
      throw err;
    }
    return [...hiddenByDataScope(registry)].map(([dimension, tools]): SafetyCheck => {
      const name = `data scope ${dimension} (pack ${pack.name}) hides no tool from a caller scoped on it`;
      if (tools.length === 0) return { name, ok: true };
      return {
        name,
        ok: true,
        warning: true,
        detail: `hides ${tools.join(', ')}`,
        fix: `apply ${dimension} in each template a scoped caller should see (dataScope: ['${dimension}'], binding ctx.dataScope); a report is hidden while one of its templates is`,
      };
    });
  });
}
