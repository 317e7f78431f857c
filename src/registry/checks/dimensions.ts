import { ConfigError } from '../../lib/errors.js';
import type { AnyTemplate } from '../types.js';

/**
 * A template's pack's data-scope dimensions, each well formed, and the ones the template applies
 * among them: gives the names of the pack's dimensions.
 */
export function assertDimensions(template: AnyTemplate): string[] {
  const declared = (template.dimensions ?? []).map((dimension) => {
    const where = `template ${template.name}: data-scope dimension ${JSON.stringify(dimension.name)}`;
    if (!/^[a-z][a-z0-9_]*$/.test(dimension.name)) throw new ConfigError(`${where}: name must be snake_case`);
    if (dimension.description.trim() === '') throw new ConfigError(`${where}: say what its values are`);
    return dimension.name;
  });
  for (const dimension of template.dataScope ?? []) {
    if (!declared.includes(dimension)) {
      throw new ConfigError(
        `template ${template.name}: applies the data-scope dimension "${dimension}", which its pack does not declare (its dimensions: ${declared.join(', ') || 'none'}); declare it in the pack's dataScope and give it to templateKit`,
      );
    }
  }
  return declared;
}
