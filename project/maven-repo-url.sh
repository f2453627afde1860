#!/usr/bin/env sh
# Prints the Maven repository sbt should use: the mirror of `central` (or `*`) that mvn uses on this machine,
# from ~/.m2/settings.xml, else Maven Central itself. sbt reaches nothing else.
settings="${MAVEN_SETTINGS:-$HOME/.m2/settings.xml}"
url=""
if [ -f "$settings" ]; then
  url=$(tr -d '\n\r' < "$settings" | sed 's/<mirror>/\n<mirror>/g' | grep '<mirror>' |
        grep -E '<mirrorOf>[^<]*(central|\*)[^<]*</mirrorOf>' | head -1 |
        sed -n 's:.*<url>[[:space:]]*\([^<[:space:]]*\)[[:space:]]*</url>.*:\1:p')
fi
echo "${url:-https://repo1.maven.org/maven2/}"
