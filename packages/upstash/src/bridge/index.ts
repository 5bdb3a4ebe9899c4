export { type Bridge, type BridgeOptions, startBridge } from './server.ts';
