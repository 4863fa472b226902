#!/bin/sh
. /tmp/helper.env
