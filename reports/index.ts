/** Every report of the sales pack, built from its templates through the registry. */
import type { AnyReport } from '../src/reports.js';
import { salesTrendReport } from './sales-trend-report.js';
import { weeklySalesReport } from './weekly-sales-report.js';

export const reports: readonly AnyReport[] = [weeklySalesReport, salesTrendReport];
