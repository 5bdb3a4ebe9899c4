import { vectorVariant } from './vector-variant.ts';

// Exact search in SQL on every call, without the vectors kept in process.
vectorVariant('libsql (exact scans in SQL, no kept copies)', { cache: false });
