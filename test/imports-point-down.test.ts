/**
 * Every import points down: no cycle among src/, pack/, queries/, reports/ and examples/, type-only
 * imports included, and no import against the layer rules of .dependency-cruiser.mjs. The check is
 * dependency-cruiser's, with the configuration `npm run lint:deps` runs, so the two never disagree.
 */
import { resolve } from 'node:path';
import { cruise, type ICruiseOptions, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const CHECKED = ['src', 'pack', 'queries', 'reports', 'examples'];
const FIXTURE = 'test/fixtures/import-cycle';

async function cruised(paths: string[], overrides: ICruiseOptions = {}): Promise<ICruiseResult> {
  const options = await extractDepcruiseOptions(resolve(ROOT, '.dependency-cruiser.mjs'));
  const { output } = await cruise(
    paths,
    { ...options, baseDir: ROOT, ...overrides },
    {},
    { tsConfig: extractTSConfig(resolve(ROOT, 'tsconfig.json')) },
  );
  if (typeof output === 'string') throw new Error('dependency-cruiser answered with a report, not a result');
  return output;
}

/** A cycle as one line, starting from its first module in sort order, so each cycle has one spelling. */
function chainOf(violation: IViolation): string {
  const ring = violation.cycle!.map((step) => step.name);
  const first = ring.indexOf([...ring].sort()[0]!);
  const turned = [...ring.slice(first), ...ring.slice(0, first)];
  return [...turned, turned[0]].join(' → ');
}

function cyclesIn(result: ICruiseResult): string[] {
  const cycles = result.summary.violations.filter((v) => v.rule.name === 'no-circular' && v.cycle);
  return [...new Set(cycles.map(chainOf))].sort();
}

describe('imports point down', () => {
  let result: ICruiseResult;
  beforeAll(async () => {
    result = await cruised(CHECKED);
  });

  it('cruises the engine and the packs', () => {
    // A cruise that found nothing would find no cycle either.
    const modules = result.modules.map((m) => m.source);
    expect(modules.length).toBeGreaterThan(150);
    for (const file of ['src/registry/index.ts', 'pack/index.ts', 'queries/index.ts', 'reports/index.ts'])
      expect(modules).toContain(file);
    expect(modules.some((m) => m.startsWith('examples/'))).toBe(true);
  });

  it('finds no cycle, type-only imports included', () => {
    expect(cyclesIn(result)).toEqual([]);
  });

  it('finds no import against a layer rule', () => {
    const broken = result.summary.violations
      .filter((v) => v.rule.name !== 'no-circular')
      .map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    expect(broken).toEqual([]);
  });

  it('reports a cycle of type-only imports (the fixture hen.ts ↔ egg.ts)', async () => {
    const fixture = await cruised([FIXTURE]);
    expect(cyclesIn(fixture)).toEqual([`${FIXTURE}/egg.ts → ${FIXTURE}/hen.ts → ${FIXTURE}/egg.ts`]);
    // Without tsPreCompilationDeps the type-only imports vanish, and the cycle with them.
    const compiled = await cruised([FIXTURE], { tsPreCompilationDeps: false });
    expect(cyclesIn(compiled)).toEqual([]);
  });
});
