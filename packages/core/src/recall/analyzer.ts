import { stemmer } from 'stemmer';
import { eng } from 'stopword';
import { MemoryError } from '../errors.ts';

/**
 * How message text becomes keyword terms, for the keyword index and for queries alike (a store
 * holds one analyzer, so its index and its queries always agree):
 *
 * 1. Latin, Greek and Cyrillic letters lose their accents (`Café` → `cafe`, `Tromsø` →
 *    `tromso`, `ß` → `ss`); marks of other scripts, which change the letter, stay.
 *    Compatibility forms are unified (NFKC).
 * 2. Lower case.
 * 3. Words by Unicode word segmentation (`Intl.Segmenter`: dictionary-based for Chinese,
 *    Japanese and Thai), each split further at anything that is not a letter, digit or mark, so
 *    `ORD-4471` gives `ord` and `4471`, `3.14` gives `3` and `14`. Numbers and ids are terms.
 * 4. Stop words dropped (default: `DEFAULT_STOP_WORDS`, the English list of the `stopword`
 *    package), compared after steps 1–2.
 * 5. Words of ASCII letters stemmed with the Porter stemmer (`stemmer` package): `running` →
 *    `run`. Other words are kept as they are.
 * 6. Terms longer than 64 characters are cut to 64.
 *
 * Every term is a run of letters, digits and marks: no spaces, punctuation or operators of any
 * search syntax, so a backend can index the terms joined by spaces with a whitespace tokenizer.
 */
export interface KeywordAnalyzer {
  /** Identifies the settings (`stem`, the stop-word list), so an index knows what built it. */
  readonly id: string;
  /** The terms of `text`, in order, repeats kept. */
  terms(text: string): string[];
}

/** Options of `createKeywordAnalyzer`. */
export interface KeywordAnalyzerOptions {
  /** Words never indexed or searched. Default `DEFAULT_STOP_WORDS`; `[]` keeps every word. */
  stopWords?: readonly string[];
  /** Porter-stem ASCII words. Default `true`. */
  stem?: boolean;
}

/** The default stop words: the English list of the `stopword` package (108 words). */
export const DEFAULT_STOP_WORDS: readonly string[] = Object.freeze([...eng]);

/** Longest term kept, in characters; longer ones are cut. */
const MAX_TERM = 64;
/** Stems an analyzer remembers (see `terms`). */
const STEM_CACHE_SIZE = 20_000;
const FOLDED = /(?<=[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}]\p{M}*)\p{M}/gu;
const SEPARATORS = /[^\p{L}\p{N}\p{M}]+/u;
const ASCII_WORD = /^[a-z]+$/;
const ASCII = /^\p{ASCII}*$/u;

let segmenter: Intl.Segmenter | undefined;

/** Latin letters Unicode does not decompose, spelt as their usual ASCII. */
const LETTERS: Readonly<Record<string, string>> = {
  ø: 'o',
  ł: 'l',
  đ: 'd',
  æ: 'ae',
  œ: 'oe',
  ß: 'ss',
  þ: 'th',
  ı: 'i',
};
const UNDECOMPOSED = /[øłđæœßþı]/g;

/** `text` without Latin/Greek/Cyrillic accents, compatibility forms unified, lower case. */
export function foldText(text: string): string {
  // ASCII has no accents or compatibility forms: both normalisations leave it as it is.
  if (ASCII.test(text)) return text.toLowerCase();
  return text
    .normalize('NFKD')
    .replace(FOLDED, '')
    .normalize('NFKC')
    .toLowerCase()
    .replace(UNDECOMPOSED, (ch) => LETTERS[ch] ?? ch);
}

function words(folded: string): string[] {
  // In ASCII, word segmentation never breaks a run of letters and digits, and every segment
  // holding one is word-like: splitting at the separators alone gives the same words, without
  // the segmenter's cost (most of the analyzer's time on ordinary English text).
  if (ASCII.test(folded)) return folded.split(SEPARATORS).filter((piece) => piece !== '');
  segmenter ??= new Intl.Segmenter('und', { granularity: 'word' });
  const out: string[] = [];
  for (const s of segmenter.segment(folded)) {
    if (!s.isWordLike) continue;
    for (const piece of s.segment.split(SEPARATORS)) if (piece !== '') out.push(piece);
  }
  return out;
}

/**
 * The analyzer of a store created with `keywords: false`: no message has terms, so the store
 * indexes nothing and offers no keyword search (`store.keywords` is undefined), while its edits and
 * deletes still take stored messages' terms out. See `KeywordDriver`.
 */
export const NO_KEYWORD_INDEX: KeywordAnalyzer = Object.freeze({ id: 'off', terms: () => [] });

/**
 * An analyzer with these options (see `KeywordAnalyzer` for the steps); `false` (a store's
 * `keywords: false`) gives `NO_KEYWORD_INDEX`.
 */
export function createKeywordAnalyzer(options: KeywordAnalyzerOptions | false = {}): KeywordAnalyzer {
  if (options === false) return NO_KEYWORD_INDEX;
  if (options === null || typeof options !== 'object') {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'keyword options must be false (no keyword index) or an object { stopWords?, stem? }',
    );
  }
  const stem = options.stem ?? true;
  const list = options.stopWords ?? DEFAULT_STOP_WORDS;
  if (!Array.isArray(list) || list.some((w) => typeof w !== 'string')) {
    throw new MemoryError('INVALID_ARGUMENT', 'keywords.stopWords must be an array of strings');
  }
  if (typeof stem !== 'boolean') throw new MemoryError('INVALID_ARGUMENT', 'keywords.stem must be a boolean');
  const stop = new Set(list.flatMap((w) => words(foldText(w))));
  const id = `v1;stem=${stem};stop=${[...stop].sort().join(',')}`;
  // Stems of words seen before: a conversation repeats its words, and stemming is most of the
  // analyzer's time on English text. Cleared when full, so it stays bounded.
  const stems = new Map<string, string>();
  const stemOf = (word: string) => {
    let term = stems.get(word);
    if (term === undefined) {
      if (stems.size >= STEM_CACHE_SIZE) stems.clear();
      term = stemmer(word);
      stems.set(word, term);
    }
    return term;
  };
  return {
    id,
    terms(text) {
      const out: string[] = [];
      for (const word of words(foldText(text))) {
        if (stop.has(word)) continue;
        const term = stem && ASCII_WORD.test(word) ? stemOf(word) : word;
        // A term of at most MAX_TERM code units has at most MAX_TERM characters.
        out.push(
          term.length > MAX_TERM && [...term].length > MAX_TERM
            ? [...term].slice(0, MAX_TERM).join('')
            : term,
        );
      }
      return out;
    },
  };
}

/** The analyzer of stores built without keyword options. */
export const defaultKeywordAnalyzer: KeywordAnalyzer = createKeywordAnalyzer();
