#!/usr/bin/env node
// Starts the `engram` CLI (export, import, copy) the way bin/engram-inspect.mjs starts the inspector.
import { launch } from './launch.mjs';

launch('engram');
