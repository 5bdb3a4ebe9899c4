import type { AdapterDescriptor, DescriptorOptions, MemoryStorage } from '@engram/core/driver';

/**
 * The adapter packages the inspector opens URLs with: its optional peer dependencies, the same
 * list as the repository's adapters.json (`pnpm check:repo` checks that they agree). Each is
 * reached through its descriptor (`<package>/descriptor`), never by name.
 */
export const ADAPTER_PACKAGES = [
  '@engram/libsql',
  '@engram/pg',
  '@engram/upstash',
  '@engram/mongodb',
  '@engram/oracle',
] as const;

/** The descriptors of the adapters installed next to the inspector, and the packages that are not. */
export async function installedAdapters(): Promise<{ found: AdapterDescriptor[]; missing: string[] }> {
  const found: AdapterDescriptor[] = [];
  const missing: string[] = [];
  for (const name of ADAPTER_PACKAGES) {
    try {
      found.push(((await import(`${name}/descriptor`)) as { descriptor: AdapterDescriptor }).descriptor);
    } catch {
      missing.push(name);
    }
  }
  return { found, missing };
}

/** A store from the descriptor that opens `url`'s scheme; `null` when no installed one does. */
export async function openWithDescriptor(
  url: string,
  options: DescriptorOptions,
  env: Record<string, string | undefined>,
): Promise<{ storage: Promise<MemoryStorage>; descriptor: AdapterDescriptor } | { unknown: string }> {
  const scheme = url.slice(0, url.indexOf(':') + 1).toLowerCase();
  const { found, missing } = await installedAdapters();
  const descriptor = found.find((d) => d.schemes.includes(scheme));
  if (descriptor) return { descriptor, storage: descriptor.open(url, options, env) };
  const known = found.map((d) => `${d.schemes.join(' ')} (${d.package})`).join(', ');
  const absent = missing.length > 0 ? `; not installed: ${missing.join(', ')}` : '';
  return { unknown: `no installed adapter opens ${scheme} URLs; known schemes: ${known || 'none'}${absent}` };
}
