export * from './fault-injection.ts';
export * from './fault-config.ts';
