export { type Bridge, type BridgeOptions, startBridge } from './bridge/index.ts';
