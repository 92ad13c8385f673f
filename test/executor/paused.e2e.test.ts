import { pausedExecutor } from './paused.e2e.suite.ts';

pausedExecutor();
