/**
 * The rules of a model with stock figures and several fact tables, each refused when the pack loads in
 * one line naming the declaration, the field and the fix (docs/your-own-database.md lists them), built
 * from the billing pack's model with one thing broken; and the model as shipped, which loads.
 */
import { describe, expect, it } from 'vitest';
import { billingMetrics } from '../../examples/billing/pack/metrics.js';
import { PERSONAL_COLUMNS } from '../../examples/billing/pack/schema.js';
import type { MetricSource, MetricsModel } from '../../src/metrics/declarations.js';
import { metricsTemplate } from '../../src/metrics/tool.js';

const [invoices, subscriptions, events] = billingMetrics.sources as [MetricSource, MetricSource, MetricSource];
const load = (model: Partial<MetricsModel>): unknown =>
  metricsTemplate({ ...billingMetrics, ...model }, PERSONAL_COLUMNS);
const where = 'metrics of query_billing: ';

describe('stock figures and fact tables: the declarations the engine refuses', () => {
  it('loads the billing model as shipped: three fact tables, one of them a stock, one tool', () => {
    expect(() => load({})).not.toThrow();
  });

  it('loads a model whose first metric is a ratio of stocks: its example calls group it by month, not weekday', () => {
    const arpa = billingMetrics.metrics.find((m) => m.name === 'arpa')!;
    const template = load({ metrics: [arpa, ...billingMetrics.metrics.filter((m) => m !== arpa)] }) as {
      examples: Record<string, unknown>[];
    };
    expect(template.examples[0]).toMatchObject({ metrics: ['arpa'], group_by: ['month'] });
  });

  it('refuses a stock source declared a rollup or keyed by a time grain', () => {
    for (const broken of [{ rollup: true }, { timeGrain: 'day' as const }]) {
      expect(() => load({ sources: [invoices, { ...subscriptions, ...broken }, events] })).toThrow(
        `${where}source subscriptions is a stock (until), so it is base rows; remove its rollup and timeGrain`,
      );
    }
  });

  it('refuses a stock source that names an entity', () => {
    expect(() =>
      load({ sources: [invoices, { ...subscriptions, entities: { account: 's.account_id' } }, events] }),
    ).toThrow(`${where}source subscriptions is a stock (until), so it names no entity`);
  });

  it('refuses a metric measured as a stock on one source and as a flow on another', () => {
    const mrr = subscriptions.measures.mrr!;
    expect(() =>
      load({ sources: [{ ...invoices, measures: { ...invoices.measures, mrr } }, subscriptions, events] }),
    ).toThrow(
      `${where}metric mrr is measured as a stock on source subscriptions and as a flow on source invoices; measure it on sources of one kind (with until, or without)`,
    );
  });

  it('refuses a metric or an attribute that no source of base rows carries', () => {
    const other = { invoices: { aggregate: 'count' as const } };
    expect(() => load({ sources: [invoices, subscriptions, { ...events, measures: other }] })).toThrow(
      `${where}metric events is measured by no source of base rows; add it to the measures of the base source of its fact table (invoices or subscriptions or events)`,
    );
    const { kind: _kind, ...attributes } = events.attributes;
    expect(() => load({ sources: [invoices, subscriptions, { ...events, attributes }] })).toThrow(
      `${where}attribute kind is carried by no source of base rows; add it to the attributes of the base source of its fact table`,
    );
  });

  it('refuses a ratio of two fact tables, and a source that measures nothing', () => {
    const ratio = {
      name: 'invoiced_per_account',
      unit: 'money' as const,
      ratio: ['invoiced', 'subscribed_accounts'] as const,
    };
    expect(() =>
      load({ metrics: [...billingMetrics.metrics, { ...ratio, description: 'Invoiced per subscribed account.' }] }),
    ).toThrow(
      `${where}ratio invoiced_per_account divides invoiced by subscribed_accounts, which are measured on different fact tables`,
    );
    expect(() => load({ sources: [...billingMetrics.sources, { ...events, name: 'idle', measures: {} }] })).toThrow(
      `${where}source idle measures nothing; give it measures, or remove it`,
    );
  });
});
