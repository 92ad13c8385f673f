export * from './metrics.ts';
export * from './http-metrics.ts';
export * from './port-metrics.ts';
