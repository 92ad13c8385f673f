import { runOnPostgres } from '../support/test-stores.ts';
import { controlCharactersEndToEnd } from './control-characters.e2e.suite.ts';

// This file's test system keeps its events and read models on the run's PostgreSQL server, which cannot hold U+0000.
runOnPostgres();
controlCharactersEndToEnd();
