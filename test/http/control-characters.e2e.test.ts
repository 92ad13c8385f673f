import { controlCharactersEndToEnd } from './control-characters.e2e.suite.ts';

// On the embedded stores (SQLite); control-characters.on-postgres.e2e.test.ts runs the same on PostgreSQL.
controlCharactersEndToEnd();
