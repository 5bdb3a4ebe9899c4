import { createKeywordAnalyzer } from '@engram/core';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/**
 * A seeded generator of multi-session conversations with planted facts and questions whose
 * evidence turns are known: the offline stand-in for a public long-conversation benchmark.
 * Each conversation is one resource, each session one thread, each turn one message. Every
 * fact has distractor turns in other sessions that share its topic words with another value.
 */

/** What a question tests. */
export type Category = 'name' | 'number' | 'id' | 'rare word' | 'paraphrase' | 'multi-session';
export const CATEGORIES: readonly Category[] = [
  'name',
  'number',
  'id',
  'rare word',
  'paraphrase',
  'multi-session',
];

export interface Turn {
  id: string;
  role: 'user' | 'assistant';
  text: string;
  createdAt: Date;
}

export interface Session {
  id: string;
  turns: Turn[];
}

export interface Question {
  id: string;
  category: Category;
  text: string;
  /** Ids of the turns that hold the answer. */
  evidence: string[];
}

export interface Conversation {
  id: string;
  sessions: Session[];
  questions: Question[];
}

export interface RetrievalDataset {
  seed: number;
  conversations: Conversation[];
}

export interface DatasetSize {
  conversations: number;
  sessions: number;
  turnsPerSession: number;
}

/** The full dataset: 10 conversations, 150 sessions, 4,500 turns, 160 questions. */
export const FULL: DatasetSize = { conversations: 10, sessions: 15, turnsPerSession: 30 };
/** The quick one: 3 conversations of the same shape (48 questions). */
export const QUICK: DatasetSize = { conversations: 3, sessions: 15, turnsPerSession: 30 };

type Rand = () => number;

function random(seed: number): Rand {
  const generator = xoroshiro128plus(seed);
  return () => uniformFloat64(generator);
}
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
function shuffle<T>(r: Rand, xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
const code = (r: Rand, prefix: string, digits: number) =>
  `${prefix}-${Array.from({ length: digits }, () => int(r, 0, 9)).join('')}`;

const NAMES = [
  'Priya',
  'Tomasz',
  'Ingrid',
  'Kwame',
  'Mireille',
  'Haruto',
  'Esperanza',
  'Dmitri',
  'Aoife',
  'Rafael',
  'Zanele',
  'Lucjan',
  'Soraya',
  'Bjorn',
  'Nkechi',
  'Ottilie',
  'Yusuf',
  'Marisol',
  'Teodor',
  'Ayasha',
  'Florin',
  'Keziah',
  'Anselm',
  'Lwazi',
  'Paloma',
  'Evander',
  'Siobhan',
  'Casimir',
  'Noor',
  'Ignatius',
];
const JOBS = [
  'nurse',
  'architect',
  'baker',
  'pilot',
  'librarian',
  'welder',
  'dentist',
  'translator',
  'florist',
  'surveyor',
];
const CITIES = [
  'Lisbon',
  'Tromso',
  'Valparaiso',
  'Tbilisi',
  'Ljubljana',
  'Cusco',
  'Hobart',
  'Gdansk',
  'Oaxaca',
  'Bergen',
  'Porto',
  'Kyoto',
];
const PETS = ['puppy', 'kitten', 'parrot', 'rabbit', 'tortoise'];
const RELATIVES = ['sister', 'brother', 'cousin', 'aunt', 'uncle', 'neighbour', 'colleague'];
const RARE = [
  'kohlrabi',
  'sphygmomanometer',
  'theremin',
  'axolotl',
  'zarzuela',
  'gnocchetti',
  'quokka',
  'bandoneon',
  'tamarillo',
  'durian',
  'ocarina',
  'mangosteen',
  'kintsugi',
  'hurdygurdy',
  'jabuticaba',
  'sousaphone',
  'nudibranch',
  'cassowary',
  'marimba',
  'rambutan',
];
const RARE_SETTINGS = [
  'the farmers market',
  'a flea market',
  'the night fair',
  'a museum shop',
  'the harbour festival',
  "my friend's place",
];

/** One planted fact: its evidence turns, the question, and distractor turns. */
interface Planted {
  category: Category;
  evidence: string[];
  question: string;
  distractors: string[];
}

/**
 * Paraphrase pairs: the question shares no term with the evidence (checked with core's
 * analyzer when the dataset is built), only its meaning.
 */
const PARAPHRASES: readonly [string, string, string][] = [
  [
    "I've started taking cello lessons every Saturday morning.",
    'Which stringed instrument am I learning to play?',
    'My lessons on Saturday got moved to the afternoon because the teacher is away.',
  ],
  [
    'My doctor told me to cut back on coffee because of my blood pressure.',
    'Which drink did the physician advise reducing for health reasons?',
    'The doctor said my blood tests came back fine this time.',
  ],
  [
    'We finally booked the honeymoon: two weeks in Kyoto in April.',
    'Where are the newlyweds travelling after the wedding?',
    'We booked two weeks off in April for the kitchen renovation.',
  ],
  [
    'Our basement flooded after the storm and ruined all the carpets.',
    'What water damage happened at home recently?',
    'The storm knocked the power out for an hour, nothing was ruined.',
  ],
  [
    'I quit engineering and now teach chemistry at a secondary school.',
    'What subject does the former technician instruct pupils in?',
    'The school sent a letter about the chemistry lab being repainted.',
  ],
  [
    'My grandmother turns ninety next month and we are planning a big party.',
    'Which elderly relative has a milestone birthday coming up?',
    'We are planning a party for the team next month.',
  ],
  [
    'I sprained my ankle jogging on the trail last Sunday.',
    'What injury did I get while running outdoors?',
    'The trail was muddy on Sunday so I stayed home.',
  ],
  [
    'We adopted two goldfish and put the tank in the hallway.',
    'Which aquatic pets live in our house now?',
    'The hallway light needs a new bulb again.',
  ],
  [
    'My landlord is raising the rent by fifteen percent in January.',
    'How much more will the apartment cost me each month soon?',
    'The landlord fixed the radiator in January.',
  ],
  [
    'I passed my driving test on the third attempt yesterday.',
    'Did I manage to get a licence for the car?',
    'My third attempt at sourdough bread failed yesterday.',
  ],
];

/** The facts of one conversation, in a fixed order of categories (16 questions). */
function facts(r: Rand, conversation: number): Planted[] {
  const out: Planted[] = [];
  const names = shuffle(r, NAMES);
  let n = 0;
  const name = () => names[n++ % names.length] as string;
  // Names: the question names the person; a distractor names someone else with the same words.
  for (let i = 0; i < 2; i++) {
    const who = name();
    const job = pick(r, JOBS);
    const city = pick(r, CITIES);
    out.push({
      category: 'name',
      evidence: [`I had lunch with ${who} yesterday, they just started working as a ${job} in ${city}.`],
      question: `What job did ${who} start?`,
      distractors: [
        `${name()} also started a new job recently, something in ${pick(r, CITIES)}.`,
        `Lunch yesterday was great, I think I will start working from the office more.`,
      ],
    });
  }
  // A name asked for: the question shares its topic words with distractors, not the name.
  const relative = pick(r, RELATIVES);
  const pet = pick(r, PETS);
  const owner = pick(
    r,
    RELATIVES.filter((x) => x !== relative),
  );
  out.push({
    category: 'name',
    evidence: [`My ${owner} adopted a ${pet} last week and named it ${name()}.`],
    question: `What did my ${owner} call the new ${pet}?`,
    distractors: [
      `My ${owner} called to say the ${pet} food is sold out everywhere.`,
      `The new ${pet} next door is very loud, my ${owner} complains about it.`,
    ],
  });
  // Numbers: an amount asked for in other words than the evidence's, and numbers asked for.
  const age = int(r, 2, 14);
  out.push({
    category: 'number',
    evidence: [`The plumber quoted ${int(r, 120, 990)} dollars to fix the boiler, which seems steep.`],
    question: 'How much will the boiler repair cost?',
    distractors: [
      'The boiler made a strange noise again this morning.',
      `The laptop repair will cost ${int(r, 120, 990)} dollars, more than a new one.`,
    ],
  });
  const flat = int(r, 100, 999);
  out.push({
    category: 'number',
    evidence: [`We viewed apartment ${flat} on the fourth floor, it has a balcony and lots of light.`],
    question: `What was apartment ${flat} like?`,
    distractors: [`Apartment ${flat + int(r, 1, 9)} was dark and had no balcony at all.`],
  });
  out.push({
    category: 'number',
    evidence: [`My ${relative}'s ${pet} is ${age} years old already, hard to believe.`],
    question: `How old is my ${relative}'s ${pet}?`,
    distractors: [
      `My ${relative}'s ${pet} chewed through the charger cable again.`,
      `The ${pet} at the shelter was only ${age + 1} years old.`,
    ],
  });
  // Ids: asked by the id, and the id asked for.
  const booking = code(r, 'BK', 6);
  const city = pick(r, CITIES);
  out.push({
    category: 'id',
    evidence: [`The confirmation code for the hotel in ${city} is ${booking}, can you keep it handy?`],
    question: `Which hotel has confirmation code ${booking}?`,
    distractors: [`The confirmation code for the car rental is ${code(r, 'BK', 6)}.`],
  });
  const order = code(r, 'ORD', 5);
  const item = pick(r, ['blender', 'desk lamp', 'rain jacket', 'coffee grinder', 'bike helmet']);
  out.push({
    category: 'id',
    evidence: [`Order ${order} is the ${item}, it should arrive on Thursday.`],
    question: `What did I buy with order ${order}?`,
    distractors: [`Order ${code(r, 'ORD', 5)} got cancelled, they ran out of stock.`],
  });
  out.push({
    category: 'id',
    evidence: [`My ${relative}'s package has tracking number ${code(r, 'TRK', 8)}, it is stuck in customs.`],
    question: `What is the tracking number of the package from my ${relative}?`,
    distractors: [
      'The tracking page for the package says it left the depot.',
      `My ${relative} sent a package of books for my birthday.`,
    ],
  });
  // Rare words.
  const rare = shuffle(r, RARE);
  for (let i = 0; i < 3; i++) {
    const word = rare[i] as string;
    out.push({
      category: 'rare word',
      evidence: [`We found a ${word} at ${pick(r, RARE_SETTINGS)} and everyone wanted to see it.`],
      question: `Where did we come across the ${word}?`,
      distractors: [
        `We found a great stall at ${pick(r, RARE_SETTINGS)}, everyone loved it.`,
        `Someone told me a ${word} is hard to find around here.`,
      ],
    });
  }
  // Paraphrases: three of the list, a different three per conversation.
  for (let i = 0; i < 3; i++) {
    const [evidence, question, distractor] = PARAPHRASES[(conversation * 3 + i) % PARAPHRASES.length] as [
      string,
      string,
      string,
    ];
    out.push({ category: 'paraphrase', evidence: [evidence], question, distractors: [distractor] });
  }
  // Multi-session: two turns in different sessions together answer the question.
  const first = pick(r, CITIES);
  const second = pick(
    r,
    CITIES.filter((c) => c !== first),
  );
  out.push({
    category: 'multi-session',
    evidence: [
      `I ran my first half marathon in ${first}, finished in ${int(r, 95, 140)} minutes.`,
      `Just signed up for the full marathon in ${second} next autumn!`,
    ],
    question: 'Which marathon races have I run or signed up for?',
    distractors: ['I watched the marathon on TV, the runners were incredible.'],
  });
  return out;
}

/** Ordinary turns, with topic words that also occur in the questions (weak distractors). */
const FILLER_USER = [
  'Work was busy today, lots of meetings about the {x} project.',
  'I tried a new recipe for {x} soup tonight and it turned out fine.',
  'The weather in {c} looks rainy all week, so no hiking plans.',
  'Thinking about repainting the {x} room a lighter colour.',
  'My {r} called to ask about the weekend plans.',
  'I watched a documentary about {x} farming, surprisingly good.',
  'Need to remember to renew the {x} subscription before Friday.',
  'Started reading a novel set in {c}, slow but beautiful.',
  'The train was late again, forty minutes standing on the platform.',
  'We had friends over for dinner and played board games until midnight.',
  'I should call the bank about the {x} fee on my statement.',
  'Went for a long walk by the river, the trees are turning orange.',
  'The gym was packed so I did a short workout at home instead.',
  'Our team finally shipped the {x} release, everyone is relieved.',
  'I keep forgetting to water the {x} plants on the balcony.',
];
const FILLER_ASSISTANT = [
  'That sounds like a full day. How are you feeling about the {x} side of things?',
  'Nice! Would you like me to note the {x} part down for later?',
  'Good to know. Anything you want to plan around {c}?',
  'I can remind you about the {x} thing tomorrow if you like.',
  'That makes sense. What would you like to do next with the {x} plans?',
  'Thanks for sharing. Tell me more about {c} whenever you want.',
  'Sounds good, I will keep the {x} details in mind.',
  'Interesting! How did the {x} idea go in the end?',
  'Your {r} sounds thoughtful. Did you settle anything?',
  'Want me to look up opening hours in {c}?',
  'Take it easy tonight, the {x} stuff can wait until morning.',
  'Happy to help with a checklist for the {x} work.',
];
const TOPICS = [
  'garden',
  'tomato',
  'insurance',
  'guest',
  'mobile',
  'orchard',
  'streaming',
  'kitchen',
  'mushroom',
  'payroll',
  'pumpkin',
  'analytics',
];

function filler(r: Rand, role: 'user' | 'assistant'): string {
  return pick(r, role === 'assistant' ? FILLER_ASSISTANT : FILLER_USER)
    .replace('{x}', pick(r, TOPICS))
    .replace('{c}', pick(r, CITIES))
    .replace('{r}', pick(r, RELATIVES));
}

/** The dataset of `size`, the same for the same seed. */
export function generateDataset(size: DatasetSize, seed = 27): RetrievalDataset {
  const analyzer = createKeywordAnalyzer();
  const conversations: Conversation[] = [];
  const start = Date.UTC(2026, 0, 5);
  for (let c = 0; c < size.conversations; c++) {
    const r = random(seed * 1_000 + c);
    const cid = `conv${String(c).padStart(2, '0')}`;
    const sessions: Session[] = Array.from({ length: size.sessions }, (_, s) => ({
      id: `${cid}-s${String(s).padStart(2, '0')}`,
      turns: [] as Turn[],
    }));
    // Text of each slot (session × turn); user turns are the even ones.
    const slots: (string | undefined)[][] = sessions.map(() => new Array(size.turnsPerSession));
    const free = (s: number) =>
      Array.from({ length: size.turnsPerSession / 2 }, (_, k) => 2 * k).filter((t) => !slots[s]?.[t]);
    const place = (text: string, sessionPool: number[]): [number, number] => {
      for (;;) {
        const s = pick(r, sessionPool);
        const open = free(s);
        if (open.length === 0) continue;
        const t = pick(r, open);
        (slots[s] as (string | undefined)[])[t] = text;
        return [s, t];
      }
    };
    const all = sessions.map((_, s) => s);
    const questions: Question[] = facts(r, c).map((fact, q) => {
      // Evidence in different sessions (multi-session facts: in order), distractors anywhere.
      const used: number[] = [];
      const evidence = fact.evidence.map((text, k) => {
        const pool = all.filter((s) => !used.includes(s) && (k === 0 || s > (used.at(-1) as number)));
        const at = place(text, k === 0 && fact.evidence.length > 1 ? pool.slice(0, -3) : pool);
        used.push(at[0]);
        return at;
      });
      for (const text of fact.distractors) place(text, all);
      if (fact.category === 'paraphrase') assertNoSharedTerms(fact, analyzer);
      return {
        id: `${cid}-q${String(q).padStart(2, '0')}`,
        category: fact.category,
        text: fact.question,
        evidence: evidence.map(([s, t]) => turnId(cid, s, t)),
      };
    });
    sessions.forEach((session, s) => {
      for (let t = 0; t < size.turnsPerSession; t++) {
        const role = t % 2 === 0 ? 'user' : 'assistant';
        session.turns.push({
          id: turnId(cid, s, t),
          role,
          text: slots[s]?.[t] ?? filler(r, role),
          // A session every three days, a turn a minute.
          createdAt: new Date(start + s * 3 * 86_400_000 + t * 60_000),
        });
      }
    });
    conversations.push({ id: cid, sessions, questions });
  }
  return { seed, conversations };
}

const turnId = (cid: string, s: number, t: number) =>
  `${cid}-s${String(s).padStart(2, '0')}-t${String(t).padStart(2, '0')}`;

function assertNoSharedTerms(fact: Planted, analyzer: ReturnType<typeof createKeywordAnalyzer>): void {
  const asked = new Set(analyzer.terms(fact.question));
  const shared = fact.evidence.flatMap((e) => analyzer.terms(e)).filter((t) => asked.has(t));
  if (shared.length > 0)
    throw new Error(
      `paraphrase ${JSON.stringify(fact.question)} shares terms with its evidence: ${shared.join(', ')}`,
    );
}

/** Counts of a dataset, for the report. */
export function datasetShape(data: RetrievalDataset) {
  const sessions = data.conversations.reduce((n, c) => n + c.sessions.length, 0);
  const turns = data.conversations.reduce(
    (n, c) => n + c.sessions.reduce((m, s) => m + s.turns.length, 0),
    0,
  );
  const questions = data.conversations.flatMap((c) => c.questions);
  const byCategory = Object.fromEntries(
    CATEGORIES.map((cat) => [cat, questions.filter((q) => q.category === cat).length]),
  );
  return {
    seed: data.seed,
    conversations: data.conversations.length,
    sessions,
    turns,
    questions: questions.length,
    byCategory,
  };
}
