import { randomBytes } from 'node:crypto';
import { requiredServices } from '@engram/conformance';

/** True when `service` is listed in ENGRAM_REQUIRE (a missing service is then a failure). */
export function required(service: string): boolean {
  return requiredServices().has(service);
}

/** The real Redis behind the bridge tests, or why they are skipped. */
export const redisUrl = process.env.ENGRAM_REDIS_URL;
export const redisSkip =
  redisUrl || required('upstash') || required('redis')
    ? undefined
    : 'ENGRAM_REDIS_URL is not set (run `eval "$(bash scripts/redis.sh)"`)';

/** The Upstash REST endpoint (the local bridge or Upstash itself), or why tests are skipped. */
export const upstashUrl = process.env.ENGRAM_UPSTASH_URL;
export const upstashToken = process.env.ENGRAM_UPSTASH_TOKEN ?? '';
export const upstashSkip =
  upstashUrl || required('upstash')
    ? undefined
    : 'ENGRAM_UPSTASH_URL is not set (run `eval "$(bash scripts/upstash.sh)"`)';

/** A key prefix unique to this test run, so reruns never see each other's keys. */
export function runPrefix(name: string): string {
  return `engram-test:${name}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}
