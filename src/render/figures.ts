/** How a report writes its figures for a person, in Markdown and HTML alike. */

/**
 * One rule for every format a person reads (Markdown, HTML, the summary line): money with thousands
 * separators and two decimals, counts with separators, rates and changes with one decimal.
 */

const ONE_DECIMAL = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });

/** A change with its sign, one decimal and its unit ("+12.5 %", "-0.4 pp", "+6.0 %"), or a dash when there is none. */
export function signed(value: number | null, unit: string): string {
  return value === null ? '–' : `${value > 0 ? '+' : ''}${ONE_DECIMAL.format(value)}${unit}`;
}

/** A rate (a percentage, a z-score) with one decimal ("11.4", "0.0"), or a dash. */
export function formatRate(value: number | null): string {
  return value === null ? '–' : ONE_DECIMAL.format(value);
}

const MONEY = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const PLAIN = new Intl.NumberFormat('en-US', { maximumFractionDigits: 20 });

/** An amount with its cents and thousands separators ("12,345.60"), or a dash. */
export function formatMoney(value: number | null): string {
  return value === null ? '–' : MONEY.format(value);
}

/** A count with thousands separators ("1,204"), or a dash. */
export function formatNumber(value: number | null): string {
  return value === null ? '–' : PLAIN.format(value);
}
