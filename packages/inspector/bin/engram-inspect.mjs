#!/usr/bin/env node
// Starts the inspector CLI (see launch.mjs).
import { launch } from './launch.mjs';

launch('cli');
