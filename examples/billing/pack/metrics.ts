/**
 * The billing metrics, served as one tool, query_billing (src/metrics/), over three fact tables: the
 * invoices (what was billed, summed over a range), the subscriptions (a stock: MRR and what is
 * subscribed as of an instant, never summed over time) and the accounts' events. One call reads one
 * fact table; each is joined to its account for the country. docs/your-own-database.md lists every
 * rule a model follows; the pack is refused at start-up, in one line with the fix, where one is broken.
 */
import type { MetricsModel } from '../../../src/metrics/declarations.js';
import { DATA_THROUGH } from './schema.js';

export const EVENT_KINDS = ['signup', 'login', 'upgrade'] as const;
export const PLANS = ['starter', 'team', 'enterprise'] as const;
export const CURRENCIES = ['USD', 'EUR', 'GBP'] as const;
export const COUNTRIES = ['US', 'DE', 'GB', 'FR', 'NL'] as const;
export const INVOICE_STATUSES = ['paid', 'open', 'void'] as const;

export const billingMetrics: MetricsModel = {
  toolName: 'query_billing',
  subject: 'billing',
  dataThrough: DATA_THROUGH,
  metrics: [
    {
      name: 'invoiced',
      unit: 'money',
      description: 'The amount invoiced in the range, paid or open, void invoices left out; per currency.',
    },
    { name: 'invoices', unit: 'count', description: 'Invoices issued in the range, void ones included.' },
    {
      name: 'mrr',
      unit: 'money',
      description: 'Monthly recurring revenue: the monthly amounts of the subscriptions running then; per currency.',
    },
    { name: 'active_subscriptions', unit: 'count', description: 'Subscriptions running then.' },
    { name: 'subscribed_accounts', unit: 'count', description: 'Accounts with a subscription running then.' },
    {
      name: 'arpa',
      unit: 'money',
      ratio: ['mrr', 'subscribed_accounts'],
      description: 'Average revenue per subscribed account: mrr / subscribed_accounts.',
    },
    { name: 'events', unit: 'count', description: 'Events of the accounts: signups, logins and upgrades.' },
  ],
  attributes: [
    { name: 'plan', values: PLANS, description: 'The subscription plan: starter, team or enterprise.' },
    { name: 'country', values: COUNTRIES, description: "The account's country, as an ISO 3166 code." },
    { name: 'status', values: INVOICE_STATUSES, description: "An invoice's status: paid, open or void." },
    { name: 'kind', values: EVENT_KINDS, description: 'What an event was: signup, login or upgrade.' },
  ],
  sources: [
    {
      name: 'invoices',
      rows: (db) =>
        db
          .selectFrom('billing_reporting.invoices as i')
          .innerJoin('billing_reporting.subscriptions as s', 's.id', 'i.subscription_id')
          .innerJoin('billing_reporting.accounts as a', 'a.id', 's.account_id'),
      reads: ['billing_reporting.invoices', 'billing_reporting.subscriptions', 'billing_reporting.accounts'],
      time: 'i.issued_at',
      currency: 'i.currency',
      attributes: { plan: 's.plan', country: 'a.country', status: 'i.status' },
      measures: {
        invoiced: { aggregate: 'sum', of: 'i.amount', rows: (eb) => eb('i.status', '<>', 'void') },
        invoices: { aggregate: 'count' },
      },
    },
    {
      // A stock: each subscription holds from its start until its end (null: it runs on).
      name: 'subscriptions',
      rows: (db) =>
        db
          .selectFrom('billing_reporting.subscriptions as s')
          .innerJoin('billing_reporting.accounts as a', 'a.id', 's.account_id'),
      reads: ['billing_reporting.subscriptions', 'billing_reporting.accounts'],
      time: 's.started_at',
      until: 's.ended_at',
      currency: 's.currency',
      attributes: { plan: 's.plan', country: 'a.country' },
      measures: {
        mrr: { aggregate: 'sum', of: 's.monthly_amount' },
        active_subscriptions: { aggregate: 'count' },
        subscribed_accounts: { aggregate: 'count_distinct', of: 's.account_id' },
      },
    },
    {
      name: 'events',
      rows: (db) =>
        db
          .selectFrom('billing_reporting.events as e')
          .innerJoin('billing_reporting.accounts as a', 'a.id', 'e.account_id'),
      reads: ['billing_reporting.events', 'billing_reporting.accounts'],
      time: 'e.occurred_at',
      attributes: { kind: 'e.kind', country: 'a.country' },
      measures: { events: { aggregate: 'count' } },
    },
  ],
  questions: [
    {
      question: 'MRR by week this month',
      arguments: { metrics: ['mrr'], group_by: ['week'], period: 'this_month' },
    },
    {
      question: 'Amount invoiced by plan last month',
      arguments: { metrics: ['invoiced', 'invoices'], group_by: ['plan'], period: 'last_month' },
    },
    {
      question: 'Subscribed accounts and ARPA by country today',
      arguments: { metrics: ['subscribed_accounts', 'arpa'], group_by: ['country'], period: 'today' },
    },
  ],
};
