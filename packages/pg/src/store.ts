import { Store } from '@engram/core/driver';
import { PostgresDriver } from './driver.ts';
import { OPTION_KEYS, type PostgresStoreOptions } from './options.ts';
import { PostgresVectors } from './vectors.ts';

/**
 * engram storage on PostgreSQL (`pg`), built by core from `PostgresDriver`. Connects lazily: the
 * first call (usually `init()`) opens the pool and migrates the schema.
 */
export class PostgresStore extends Store<PostgresDriver> {
  declare readonly name: 'pg';
  /** The keys `options` takes; any other is `INVALID_ARGUMENT` (see `ownOptions` for tools). */
  static readonly optionKeys = OPTION_KEYS;
  private readonly recall = new PostgresVectors(this.driver.vectors, (operation, fn) =>
    this.run(operation, fn),
  );

  constructor(options: PostgresStoreOptions) {
    super(new PostgresDriver(options));
  }

  /** Atomic working memory, transactional batches, not process-local (`SERVER_CAPABILITIES`). */
  override get capabilities(): PostgresDriver['capabilities'] {
    return this.driver.capabilities;
  }

  /** The schema the store writes to. */
  get schemaName(): string {
    return this.driver.names.schemaName;
  }

  /** The prefix of every table and index name. */
  get tablePrefix(): string {
    return this.driver.names.prefix;
  }

  /** Whether statements are sent as named prepared statements: the option, or detected at open. */
  get preparedStatements(): boolean {
    return this.driver.db.prepared;
  }

  /** Semantic recall vectors: pgvector or exact `real[]` (see `PostgresVectorOptions`). */
  override get vectors(): PostgresVectors {
    return this.recall;
  }
}
