"""An evaluation script still written for Python 2: it does not parse."""
import tensorflow as tf

def report(accuracy):
    print "accuracy: %.3f" % accuracy
