import { runConformance } from '@engram/conformance';
import { conformanceRun } from './conformance-setup.ts';

// The whole suite; metadata in the JSON type on 21c and later (jsonType 'auto').
runConformance(conformanceRun('oracle'));
