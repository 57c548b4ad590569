"""The recall oracle: run the model code of 100+ PyPI distributions, find each rule family's ops in the
traced graphs with torch's pattern matcher, and score `adopter check` against what ran (`bench/oracle.py`)."""
