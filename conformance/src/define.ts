import type { AreaName, Check, ConformanceInit } from './types.ts';

/** Returns a helper that defines checks of one area. */
export function defineArea(area: AreaName) {
  return (name: Check['name'], run: Check['run'], skipReason?: Check['skipReason']): Check => ({
    area,
    name,
    run,
    skipReason,
  });
}

/** The name of a check for this initializer. */
export function nameOf(check: Check, init: ConformanceInit): string {
  return typeof check.name === 'function' ? check.name(init) : check.name;
}
