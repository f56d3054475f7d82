import click
@click.command()
def main():
    print("hi")
