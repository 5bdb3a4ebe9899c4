import { runConformance } from '@engram/conformance';
import { conformanceRun } from './conformance-setup.ts';

// The whole suite in a fresh database, tables in the default schema (public).
runConformance(conformanceRun('pg').init);
